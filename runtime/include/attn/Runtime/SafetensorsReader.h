//===- SafetensorsReader.h - safetensors files, free of LLVM ----*- C++ -*-===//
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// optional "__metadata__"}) and the tensor bytes, offsets relative to the end
// of the header. The reader checks everything a truncated or lying file could
// get wrong before any tensor is read, and converts F16 / BF16 / F64 to f32.
// The JSON is parsed with nlohmann/json (Debian package nlohmann-json3-dev,
// header-only), so the runtime reads weights without LLVM; the tooling's
// SafetensorsFile (Safetensors.h) is this reader behind llvm::Expected.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_SAFETENSORSREADER_H
#define ATTN_RUNTIME_SAFETENSORSREADER_H

#include "attn/Runtime/LayerStack.h"
#include <cstdint>
#include <map>
#include <memory>
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

class SafetensorsReader {
public:
  /// Opens (memory-maps) and validates `path`: header length within the
  /// file, JSON well-formed, known dtypes, shape sizes matching the byte
  /// ranges, ranges inside the data area and not overlapping. Errors name
  /// the file and the tensor.
  static Status open(const std::string &path,
                     std::unique_ptr<SafetensorsReader> &reader);
  /// The same on bytes in memory; `path` names them in errors.
  static Status fromBytes(std::string bytes, const std::string &path,
                          std::unique_ptr<SafetensorsReader> &reader);
  ~SafetensorsReader();

  const std::string &getPath() const { return path; }
  /// Tensor names, sorted.
  std::vector<std::string> names() const;
  /// The entry of tensor `name`; null when the file has none.
  const SafetensorsEntry *find(const std::string &name) const;
  /// Tensor `name` as f32, checked to have `shape` exactly. A missing
  /// tensor or another shape is an error naming both shapes.
  Status read(const std::string &name, const std::vector<int64_t> &shape,
              std::vector<float> &data) const;

private:
  SafetensorsReader() = default;
  Status parse();

  std::string path;
  std::string owned;           ///< fromBytes: the bytes
  void *mapping = nullptr;     ///< open: the mapped file
  const char *bytes = nullptr; ///< the file's bytes, either way
  uint64_t size = 0;
  uint64_t dataStart = 0;
  std::map<std::string, SafetensorsEntry> entries;
};

} // namespace attnrt

#endif // ATTN_RUNTIME_SAFETENSORSREADER_H
