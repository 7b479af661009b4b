//===- Safetensors.cpp - weights in the safetensors format ----------------===//
#include "attn/Tooling/Safetensors.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cstring>

using namespace attnrt;

static llvm::Error fail(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

static llvm::Error toError(const Status &status) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 status.message());
}

llvm::Expected<SafetensorsFile> SafetensorsFile::open(llvm::StringRef path) {
  SafetensorsFile file;
  if (Status s = SafetensorsReader::open(path.str(), file.reader); s.failed())
    return toError(s);
  return file;
}

llvm::Expected<SafetensorsFile>
SafetensorsFile::fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
                            llvm::StringRef path) {
  SafetensorsFile file;
  if (Status s = SafetensorsReader::fromBytes(buffer->getBuffer().str(),
                                              path.str(), file.reader);
      s.failed())
    return toError(s);
  return file;
}

std::optional<std::vector<int64_t>>
SafetensorsFile::shape(llvm::StringRef name) const {
  const SafetensorsEntry *entry = reader->find(name.str());
  if (!entry)
    return std::nullopt;
  return entry->shape;
}

llvm::Expected<std::vector<float>>
SafetensorsFile::read(llvm::StringRef name,
                      llvm::ArrayRef<int64_t> shape) const {
  std::vector<float> data;
  if (Status s = reader->read(name.str(), shape.vec(), data); s.failed())
    return toError(s);
  return data;
}

llvm::Error attnrt::writeSafetensors(llvm::StringRef path,
                                     llvm::ArrayRef<NamedTensor> tensors) {
  std::vector<const NamedTensor *> sorted;
  for (const NamedTensor &t : tensors)
    sorted.push_back(&t);
  llvm::sort(sorted, [](const NamedTensor *a, const NamedTensor *b) {
    return a->name < b->name;
  });
  llvm::json::Object header;
  uint64_t offset = 0;
  for (const NamedTensor *t : sorted) {
    uint64_t bytes = t->data.size() * 4;
    header[t->name] = llvm::json::Object{
        {"dtype", "F32"},
        {"shape", llvm::json::Array(t->shape)},
        {"data_offsets", llvm::json::Array{offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json;
  llvm::raw_string_ostream(json) << llvm::json::Value(std::move(header));
  // Pad with spaces so the data starts 8-byte aligned, as the reference
  // writer does.
  json.append((8 - json.size() % 8) % 8, ' ');
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail(path, ec.message());
  char length[8];
  llvm::support::endian::write64le(length, json.size());
  os.write(length, 8);
  os << json;
  for (const NamedTensor *t : sorted)
    for (float f : t->data) {
      char le[4];
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      llvm::support::endian::write32le(le, bits);
      os.write(le, 4);
    }
  os.close();
  if (os.has_error()) { // e.g. a full disk; cleared, or LLVM aborts
    std::string message = os.error().message();
    os.clear_error();
    return fail(path, message);
  }
  return llvm::Error::success();
}
