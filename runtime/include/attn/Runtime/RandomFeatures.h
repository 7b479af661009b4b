//===- RandomFeatures.h - orthogonal random features for FAVOR+ -*- C++ -*-===//
//
// attn.kernelized takes its random projection omega [features, D] as an
// operand. Performer's FAVOR+ draws it as orthogonal random features (ORF):
// blocks of D rows that are exactly orthogonal (Gram-Schmidt of a Gaussian
// D x D matrix), each row rescaled to the norm of an independent N(0, I_D)
// vector, so that every row is still marginally N(0, I_D) while the rows of
// a block do not overlap (lower-variance kernel estimates).
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_RUNTIME_RANDOMFEATURES_H
#define ATTN_RUNTIME_RANDOMFEATURES_H

#include <cstdint>
#include <vector>

namespace attnrt {

/// omega [features, dim], row-major, reproducible from `seed` (std::mt19937_64
/// and std::normal_distribution of this C++ library); the last block is
/// cut short when features is not a multiple of dim (only its rows are
/// drawn and orthogonalized: the work is features x min(features, dim) x
/// dim, and one row of any dim costs O(dim)).
std::vector<float> orthogonalRandomFeatures(int64_t features, int64_t dim,
                                            uint64_t seed);

/// The same into out[features * dim]; false, with nothing written, when
/// its work buffer (min(features, dim) x dim doubles) cannot be allocated.
/// Allocates nothing else and throws nothing.
bool fillOrthogonalRandomFeatures(int64_t features, int64_t dim, uint64_t seed,
                                  float *out);

} // namespace attnrt

#endif // ATTN_RUNTIME_RANDOMFEATURES_H
