//===- Safetensors.h - weights in the safetensors format --------*- C++ -*-===//
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// optional "__metadata__"}) and the tensor bytes, offsets relative to the end
// of the header. The reader checks everything a truncated or lying file could
// get wrong before any tensor is read, and converts F16 / BF16 / F64 to f32.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SAFETENSORS_H
#define ATTN_RUNTIME_SAFETENSORS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnrt {

/// The element types the reader accepts (others are an error naming them).
enum class SafetensorsDtype { F32, F16, BF16, F64 };

struct SafetensorsEntry {
  SafetensorsDtype dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; ///< byte offsets into the data area
};

/// A validated safetensors file, its bytes memory-mapped.
class SafetensorsFile {
public:
  /// Opens and validates `path`: header length within the file, JSON
  /// well-formed, known dtypes, shape sizes matching the byte ranges, ranges
  /// inside the data area and not overlapping. Errors name the file and the
  /// tensor.
  static llvm::Expected<SafetensorsFile> open(llvm::StringRef path);
  /// The same on bytes already in memory; `path` names them in errors.
  static llvm::Expected<SafetensorsFile>
  fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer, llvm::StringRef path);

  llvm::StringRef getPath() const { return path; }
  bool contains(llvm::StringRef name) const { return entries.count(name); }
  std::vector<std::string> names() const;
  /// The shape of tensor `name`, if the file has it.
  std::optional<std::vector<int64_t>> shape(llvm::StringRef name) const;

  /// The tensor `name` as f32, checked to have `shape` exactly. A missing
  /// tensor or another shape is an error naming both shapes.
  llvm::Expected<std::vector<float>> read(llvm::StringRef name,
                                          llvm::ArrayRef<int64_t> shape) const;

private:
  std::string path;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  uint64_t dataStart = 0;
  llvm::StringMap<SafetensorsEntry> entries;
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

#endif // ATTN_RUNTIME_SAFETENSORS_H
