//===- YamlInput.h - read one spec document with LLVM's YAML I/O -*- C++ -*-===//
#ifndef ATTN_SPEC_LIB_YAMLINPUT_H
#define ATTN_SPEC_LIB_YAMLINPUT_H

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"
#include <optional>

namespace attnspec {

/// Checks that the main buffer of `sourceMgr` is a document LLVM's YAML I/O
/// can read without crashing or recursing without bound: UTF-8 text without
/// NUL or control bytes, nesting within attnrt::kMaxNestingDepth, exactly
/// one document whose root is a mapping, no aliases. Prints
/// file:line:col: error: and returns false otherwise.
bool screenYamlDocument(llvm::SourceMgr &sourceMgr);

/// Prints the first of YAML I/O's diagnostics (`*printed` says whether it
/// was): the later ones follow from it (a field that failed to read is
/// then "missing" or "out of range" for the mapping's checks).
void printFirstYamlError(const llvm::SMDiagnostic &diag, bool *printed);

/// Reads the main buffer of `sourceMgr` as a `T` (its MappingTraits must be
/// visible). YAML diagnostics print as file:line:col: error: ..., like every
/// other attn error, the first one only; on any error the result is empty.
template <typename T>
std::optional<T> readYamlDocument(llvm::SourceMgr &sourceMgr) {
  if (!screenYamlDocument(sourceMgr))
    return std::nullopt;
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  T value;
  bool printed = false;
  llvm::yaml::Input yin(
      buffer->getMemBufferRef(), /*Ctxt=*/nullptr,
      [](const llvm::SMDiagnostic &diag, void *printed) {
        printFirstYamlError(diag, static_cast<bool *>(printed));
      },
      &printed);
  yin >> value;
  if (yin.error())
    return std::nullopt;
  return value;
}

} // namespace attnspec

#endif // ATTN_SPEC_LIB_YAMLINPUT_H
