//===- Safetensors.h - weights in the safetensors format --------*- C++ -*-===//
//
// The tooling's view of safetensors files: the runtime's reader
// (SafetensorsReader.h, free of LLVM) behind llvm::Expected, and a writer.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TOOLING_SAFETENSORS_H
#define ATTN_TOOLING_SAFETENSORS_H

#include "attn/Runtime/SafetensorsReader.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnrt {

/// A validated safetensors file (SafetensorsReader::open's checks).
class SafetensorsFile {
public:
  static llvm::Expected<SafetensorsFile> open(llvm::StringRef path);
  /// The same on bytes already in memory; `path` names them in errors.
  static llvm::Expected<SafetensorsFile>
  fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer, llvm::StringRef path);

  llvm::StringRef getPath() const { return reader->getPath(); }
  bool contains(llvm::StringRef name) const { return reader->find(name.str()); }
  std::vector<std::string> names() const { return reader->names(); }
  /// The shape of tensor `name`, if the file has it.
  std::optional<std::vector<int64_t>> shape(llvm::StringRef name) const;

  /// The tensor `name` as f32, checked to have `shape` exactly. A missing
  /// tensor or another shape is an error naming both shapes.
  llvm::Expected<std::vector<float>> read(llvm::StringRef name,
                                          llvm::ArrayRef<int64_t> shape) const;
  const SafetensorsReader &getReader() const { return *reader; }

private:
  std::unique_ptr<SafetensorsReader> reader;
};

/// One f32 tensor to write.
struct NamedTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Writes `tensors` as an F32 safetensors file (names sorted, as the Python
/// writer does).
llvm::Error writeSafetensors(llvm::StringRef path,
                             llvm::ArrayRef<NamedTensor> tensors);

} // namespace attnrt

#endif // ATTN_TOOLING_SAFETENSORS_H
