//===- Npy.h - NumPy .npy files (float32, C order) --------------*- C++ -*-===//
#ifndef ATTN_RUNTIME_NPY_H
#define ATTN_RUNTIME_NPY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <vector>

namespace attnrt {

/// A float32 array read from an .npy file.
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

/// Reads a version 1-3 .npy file holding little-endian float32 in C order.
/// Any other dtype, Fortran order, a malformed header or a file shorter than
/// its header promises is an error naming the file.
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);

/// Writes `data` with `shape` as a version 1.0 float32 .npy file.
llvm::Error writeNpy(llvm::StringRef path, llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<float> data);

} // namespace attnrt

#endif // ATTN_RUNTIME_NPY_H
