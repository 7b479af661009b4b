//===- Npy.h - NumPy .npy files (float32, C order) --------------*- C++ -*-===//
#ifndef ATTN_TOOLING_NPY_H
#define ATTN_TOOLING_NPY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <vector>

namespace attnrt {

/// Element types .npy files are read in: little-endian float32, int32,
/// int64, and one-byte booleans / uint8 (masks).
enum class NpyDtype { F32, I32, I64, Bool, U8 };

/// The header's name of `dtype` ('<f4', ...).
llvm::StringRef npyDtypeName(NpyDtype dtype);

/// An array read from an .npy file.
struct NpyArray {
  std::vector<int64_t> shape;
  NpyDtype dtype = NpyDtype::F32;
  /// The elements when dtype is F32 (else empty).
  std::vector<float> data;
  /// The elements as stored, for every dtype.
  std::vector<char> bytes;
};

/// Reads a version 1-3 .npy file in C order. The shape's size is checked
/// against the file (and for overflow) before anything is allocated. Any
/// other dtype, Fortran order, a malformed header or a file shorter than
/// its header promises is an error naming the file. `f32Only` refuses
/// every dtype but float32.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path, bool f32Only = true);

/// The same on the bytes of an .npy file; `path` names them in errors.
llvm::Expected<NpyArray> parseNpy(llvm::StringRef bytes, llvm::StringRef path,
                                  bool f32Only = true);

/// Writes `data` with `shape` as a version 1.0 float32 .npy file.
llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<float> data);

} // namespace attnrt

#endif // ATTN_TOOLING_NPY_H
