//===- CpuGemmEmitter.h - the register-blocked CPU GEMM -------*- C++ -*-===//
//
// The emitter behind attn-matmul-to-cpu-gemm (MatmulToCpuGemm.cpp, whose
// file comment describes the loop nest): the blocking per vector width,
// B's layouts, and GemmEmitter, whose packing copies are in
// CpuGemmPacking.cpp and whose loop nest and micro-kernel are in
// MatmulToCpuGemm.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOCPU_CPUGEMMEMITTER_H
#define ATTN_CONVERSION_ATTNTOCPU_CPUGEMMEMITTER_H

#include "attn/Analysis/TargetDescription.h"
#include "attn/Transforms/ContractionMatch.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::attn {

/// How B is stored: [K, N], [N, K], or already in the panels the
/// micro-kernels read ([ceil(N / 2V)][K][2V], zeros past N: weights packed
/// once, e.g. by the layer runtime), or packed in bf16 k pairs
/// ([ceil(N / 2V)][ceil(K / 2)][2V x 2]: the vdpbf16ps micro-kernel's).
enum class BLayout { KN, NK, Packed, PackedPairs };

/// The register blocking for a vector width: rows x 2 accumulator vectors
/// plus two B vectors and one broadcast must fit the register file (32
/// registers on AVX-512: 24 + 3; 16 on AVX2: 12 + 3).
struct GemmBlocking {
  int64_t lanes;        ///< f32 lanes per vector
  int64_t rows;         ///< rows of the micro-kernel (R)
  int64_t panelVectors; ///< vectors of C per row of the micro-kernel
  /// k's per packed block: a B panel is 2 x lanes x 768 x 4 B = 96 KiB
  /// (AVX-512) or 48 KiB (AVX2), read from L2 by the micro-kernel. Long
  /// blocks load and store each C tile fewer times (once for a layer's
  /// K = 768, never loaded with a zero start): C's misses cost more than
  /// B's L2 reads (blocks of 256, whose panel fits L1, were 0-16 % slower
  /// at layer shapes, bench/RESULTS.md).
  static constexpr int64_t kKeyBlock = 768;
  /// Panels per forall iteration at least. Each group reads all of A
  /// again, so groups are as wide as the parallel tiles allow.
  static constexpr int64_t kMinGroupPanels = 2;
  /// Row blocks per A block: 16 x 12 x 768 x 4 B = 576 KiB, in L2.
  static constexpr int64_t kRowBlocks = 16;
  /// The micro-kernels of products with this few rows (emit()), in
  /// increasing order.
  static constexpr int64_t kFewRows[] = {1, 4};

  /// The blocking for a target's vector registers: 2 x rows accumulator
  /// vectors, the two B vectors and A's broadcast (24 + 3 of AVX-512's 32,
  /// 12 + 3 of AVX2's 16).
  static GemmBlocking forTarget(const TargetDescription &target) {
    return GemmBlocking{target.f32Lanes(),
                        target.vectorRegisters >= 32 ? 12 : 6, 2};
  }
  int64_t panelWidth() const { return panelVectors * lanes; }
};

class GemmEmitter {
public:
  /// Emits before `op`, which the caller erases.
  /// Row chunks are added until column groups x chunks reaches
  /// `parallelTiles`: enough forall iterations for the cores when N is
  /// narrow, no more (each chunk reads its groups' B again).
  GemmEmitter(Operation *op, GemmBlocking blocking, int64_t parallelTiles)
      : b(op->getLoc(), op), blk(blocking), parallelTiles(parallelTiles),
        f32(b.getF32Type()), vec(VectorType::get({blocking.lanes}, f32)),
        maskType(VectorType::get({blocking.lanes}, b.getI1Type())) {}

  /// C[M, N] += A B on 2-D buffers: A [M, K] ([K, M] when `aTransposed`),
  /// B as `layout` says.
  void emit(Value aBuffer, Value bBuffer, Value cBuffer, BLayout layout,
            bool aTransposed = false);
  /// emit()'s product with the micro-kernel of `blk`.
  void emitBlocked();
  /// The same per batch index of a contraction linalg.generic on buffers.
  void emitBatched(linalg::GenericOp op, const ContractionMatch &match);
  /// C is to be overwritten (it was zero-filled): the first k-block starts
  /// from zeros instead of reading C.
  void startFromZeros() { startsAtZero = true; }
  /// The element-wise `op` on C after the product (GemmEpilogue.h) is
  /// applied in the last k-block, before C is stored.
  void fuseEpilogue(linalg::GenericOp op) { epilogue = op; }

private:
  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value minI(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value maxI(Value x, Value y) { return arith::MaxSIOp::create(b, x, y); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value ceilDiv(Value x, Value y) {
    return arith::CeilDivSIOp::create(b, x, y);
  }
  Value less(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::slt, x, y);
  }
  /// An scf.for whose body returns the values it yields.
  scf::ForOp loop(Value lb, Value ub, Value step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body);
  /// for (i = lb; i < ub; i += step) body(i).
  void forEach(Value lb, Value ub, Value step, function_ref<void(Value)> body) {
    loop(lb, ub, step, {}, [&](Value i, ValueRange) {
      body(i);
      return SmallVector<Value>{};
    });
  }
  void forEach(Value count, function_ref<void(Value)> body) {
    forEach(index(0), count, index(1), body);
  }
  /// scf.forall over `counts` (on all cores).
  void parallel(ArrayRef<OpFoldResult> counts,
                function_ref<void(ValueRange)> body);
  /// if (condition) then() else otherwise().
  void ifElse(Value condition, function_ref<void()> then,
              function_ref<void()> otherwise);
  /// The lane masks of columns [n0, n0 + 2V) that are < N.
  SmallVector<Value> columnMasks(Value n0);

  /// packedB[p, k, :] = B[k, 2Vp : 2V(p + 1)], zeros past N.
  void packB(Value packedB, Value p);
  /// packedA[rb, kk, r] = A[R rb + r, k0 + kk] for kk < kLen, zeros past M.
  void packA(Value packedA, Value rb, Value k0, Value kLen);
  /// The same for a whole row block of A [M, K] with unit stride along k:
  /// lanes k's of its R rows loaded as vectors and transposed in registers.
  void packATransposing(Value packedA, Value rb, Value k0, Value kLen);
  /// The same row by row, rows past M as zeros.
  void packARows(Value packedA, Value rb, Value k0, Value kLen);
  /// PackedPairs: packedA[rb, kk, r] = the bf16 pair (A[R rb + r, k0 + 2kk],
  /// A[R rb + r, k0 + 2kk + 1]) as one i32 (low half first), rounded to
  /// nearest even; zeros past M and K.
  void packAPairs(Value packedA, Value rb, Value k0, Value kLen);
  /// One such i32 from A's row `row` at k (k + 1 read only below K).
  Value pairWord(Value row, Value k);
  /// C[R rb : R rb + R, 2Vp : 2V(p + 1)] += packedA[rb, 0 : kLen]
  /// packedB[p, k0 : k0 + kLen]; rows past M are skipped. With
  /// PackedPairs a step is a k pair: R broadcast words of A, two 32-bf16
  /// rows of B and 2R vdpbf16ps.
  void microKernel(Value packedA, Value rb, Value packedB, Value p, Value k0,
                   Value kLen);

  bool pairs() const { return layout == BLayout::PackedPairs; }

  ImplicitLocOpBuilder b;
  BLayout layout = BLayout::KN;
  bool aTransposed = false;
  bool startsAtZero = false;
  linalg::GenericOp epilogue;
  GemmBlocking blk;
  int64_t parallelTiles;
  Type f32;
  VectorType vec, maskType;
  Value a, bMat, c; // the matmul's operands
  Value m, n, k;    // and its sizes
};

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOCPU_CPUGEMMEMITTER_H
