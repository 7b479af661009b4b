//===- YamlInput.cpp - screen spec text before LLVM's YAML I/O reads it ---===//
//
// llvm::yaml::Input assumes a well-formed document: an empty or scalar root
// makes it dereference null, an alias is an "unknown node kind" followed by
// the same, and its node builder recurses once per nesting level. Specs come
// from other people and tools, so the text is screened here first.
//
//===----------------------------------------------------------------------===//
#include "YamlInput.h"
#include "attn/Runtime/InputLimits.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/YAMLParser.h"

using namespace llvm;

static bool errorAt(SourceMgr &sourceMgr, const char *where,
                    const Twine &message) {
  sourceMgr.PrintMessage(SMLoc::getFromPointer(where), SourceMgr::DK_Error,
                         message);
  return false;
}

/// The deepest block nesting of the text: indentation levels plus the
/// `- ` / `? ` indicators that open a nested node on the same line.
static const char *findExcessIndentation(StringRef text, unsigned maxDepth) {
  SmallVector<size_t> indents;
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    size_t indent = line.find_first_not_of(' ');
    if (indent == StringRef::npos || line[indent] == '#')
      continue;
    while (!indents.empty() && indents.back() >= indent)
      indents.pop_back();
    indents.push_back(indent);
    unsigned depth = indents.size();
    for (StringRef tail = line.drop_front(indent);
         (tail.starts_with("- ") || tail.starts_with("? ")) &&
         depth <= maxDepth;
         tail = tail.drop_front(2).ltrim(' '))
      ++depth;
    if (depth > maxDepth)
      return line.data() + indent;
  }
  return nullptr;
}

/// Walks the node tree up to `depth` levels; false (and an error) at the
/// first alias or node LLVM's YAML I/O cannot take.
static bool screenNode(yaml::Stream &stream, yaml::Node *node, unsigned depth) {
  if (!node)
    return false;
  if (depth > attnrt::kMaxNestingDepth) {
    stream.printError(node, "nesting deeper than " +
                                Twine(attnrt::kMaxNestingDepth) + " levels");
    return false;
  }
  if (isa<yaml::AliasNode>(node)) {
    stream.printError(node, "YAML aliases are not supported in specs");
    return false;
  }
  if (auto *map = dyn_cast<yaml::MappingNode>(node)) {
    for (yaml::KeyValueNode &entry : *map) {
      if (!screenNode(stream, entry.getKey(), depth + 1))
        return false;
      if (yaml::Node *value = entry.getValue())
        if (!isa<yaml::NullNode>(value) &&
            !screenNode(stream, value, depth + 1))
          return false;
    }
  } else if (auto *seq = dyn_cast<yaml::SequenceNode>(node)) {
    for (yaml::Node &item : *seq)
      if (!screenNode(stream, &item, depth + 1))
        return false;
  }
  return !stream.failed();
}

bool attnspec::screenYamlDocument(SourceMgr &sourceMgr) {
  const MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  StringRef text = buffer->getBuffer();
  for (const char &c : text)
    if (c == '\0' ||
        (uint8_t(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') ||
        c == '\x7f')
      return errorAt(sourceMgr, &c,
                     "a spec is UTF-8 text: control byte 0x" +
                         Twine::utohexstr(uint8_t(c)) + " found");
  const UTF8 *begin = reinterpret_cast<const UTF8 *>(text.begin());
  const UTF8 *cursor = begin;
  if (!isLegalUTF8String(&cursor, reinterpret_cast<const UTF8 *>(text.end())))
    return errorAt(sourceMgr, text.data() + (cursor - begin),
                   "a spec is UTF-8 text: invalid UTF-8 here");
  size_t deep = attnrt::findExcessNesting({text.data(), text.size()},
                                          attnrt::kMaxNestingDepth,
                                          attnrt::NestingSyntax::Yaml);
  if (deep != std::string_view::npos)
    return errorAt(sourceMgr, text.data() + deep,
                   "nesting deeper than " + Twine(attnrt::kMaxNestingDepth) +
                       " levels");
  if (const char *where = findExcessIndentation(text, attnrt::kMaxNestingDepth))
    return errorAt(sourceMgr, where,
                   "nesting deeper than " + Twine(attnrt::kMaxNestingDepth) +
                       " levels");

  yaml::Stream stream(buffer->getMemBufferRef(), sourceMgr);
  unsigned documents = 0;
  for (yaml::Document &document : stream) {
    yaml::Node *root = document.getRoot();
    if (stream.failed())
      return false;
    if (++documents > 1)
      return errorAt(sourceMgr,
                     root ? root->getSourceRange().Start.getPointer()
                          : text.data(),
                     "a spec holds one YAML document");
    if (!root || !isa<yaml::MappingNode>(root))
      return errorAt(sourceMgr,
                     root && !isa<yaml::NullNode>(root)
                         ? root->getSourceRange().Start.getPointer()
                         : text.data(),
                     "a spec is a YAML mapping (name:, attention: or "
                     "layer:, ...); this document is not one");
    if (!screenNode(stream, root, 0))
      return false;
  }
  if (stream.failed())
    return false;
  if (documents == 0)
    return errorAt(sourceMgr, text.data(), "the spec holds no YAML document");
  return true;
}

void attnspec::printFirstYamlError(const SMDiagnostic &diag, bool *printed) {
  if (*printed)
    return;
  *printed = true;
  // YAML I/O says "unexpected scalar" where it wanted a scalar and found a
  // list or a mapping.
  if (diag.getMessage() != "unexpected scalar" || !diag.getSourceMgr())
    return diag.print(nullptr, errs());
  SMDiagnostic clearer(*diag.getSourceMgr(), diag.getLoc(),
                       diag.getFilename(), diag.getLineNo(),
                       diag.getColumnNo(), diag.getKind(),
                       "expected a single value (a number, a word or a "
                       "quoted string), not a list or a mapping",
                       diag.getLineContents(), diag.getRanges());
  clearer.print(nullptr, errs());
}
