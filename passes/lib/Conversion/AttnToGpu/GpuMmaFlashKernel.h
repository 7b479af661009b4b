//===- GpuMmaFlashKernel.h - attention on mma.sync fragments -----*- C++
//-*-===//
//
// The tensor-core kernel's emitter (GpuMmaFlashKernel.cpp has its full
// description): FlashAttention-2's structure on m16n8k16 (or TF32 m16n8k8)
// mma.sync fragments, 4 warps per 64-row query tile. Declared here so that
// the warpgroup kernel for sm_90a (GpuWgmmaFlashKernel.cpp) can keep its
// staging, softmax and stores and replace its two products.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPUMMAFLASHKERNEL_H
#define ATTN_CONVERSION_ATTNTOGPU_GPUMMAFLASHKERNEL_H

#include "GpuKernelEmitter.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::attn {

constexpr int64_t kWarp = 32;

class MmaFlashEmitter : public GpuKernelEmitter {
public:
  MmaFlashEmitter(func::FuncOp host, TiledAttention attention,
                  const KernelPlan &plan, const TargetDescription &target,
                  bool countTiles, F32Mma f32Mma)
      : GpuKernelEmitter(host, attention, plan, target, countTiles),
        splitTf32(f32Mma == F32Mma::Tf32x3) {}

protected:
  int64_t invocations() const override { return rows / 16 * kWarp; }
  void prologue() override;
  SmallVector<Value> initialState() override;
  void stageTile(Value j0, Value tk) override;
  SmallVector<Value> processTile(ValueRange state, Value j0, Value tk,
                                 bool masked) override;

  // What the warpgroup kernel (GpuWgmmaFlashKernel.cpp) replaces.
  /// S = Q K^T of the staged tile: one C fragment (4 f32) per 8 keys.
  virtual SmallVector<SmallVector<Value>> scoreProducts();
  /// acc[v] += P V for value tile v (8 columns), P given as S's C
  /// fragments (probabilities, f32).
  virtual void accumulateValues(ArrayRef<SmallVector<Value>> p,
                                SmallVector<SmallVector<Value>> &acc);
  /// Where chunk `chunk` of row `row` of `tiles` (rows of `rowChunks`
  /// chunks) is stored: the buffer row and the chunk within it.
  virtual std::pair<Value, Value> chunkSlot(Value tiles, Value row, Value chunk,
                                            int64_t rowChunks);
  /// The staged tile of `rowCount` rows of `rowChunks` chunks of 8
  /// elements (CUDA: the input type; emulated: 32-bit words).
  virtual Value tileBuffer(int64_t rowCount, int64_t rowChunks);
  /// Whether Q must be in workgroup memory whenever it fits there with one
  /// stage (rather than in registers).
  virtual bool prefersStagedQuery() const {
    return headDim > 128 || (splitTf32 && headDim + valueDim > 128);
  }
  void storeResult(ValueRange state) override;
  bool splitsKeys() const override { return true; }
  void storePartials(ValueRange state, Value workgroup) override;
  /// Calls `store(e, r, col)` for C entry e (of 4 per 8 value columns) of
  /// row r at column col, where that entry is a real output element.
  void
  forEachOutputEntry(function_ref<void(int64_t e, int r, Value col)> store);

  // 16-bit words (i32: GpuCodegen).
  /// The bits of a loaded 16-bit element, zero-extended to i32.
  Value bitsOf(Value element);
  /// lo | hi << 16.
  Value pack(Value lo, Value hi) {
    return arith::OrIOp::create(b, lo, arith::ShLIOp::create(b, hi, i32(16)));
  }
  /// Two f32 rounded to the input type, as one word.
  Value packF32(Value lo, Value hi) {
    auto bits = [&](Value x) {
      return bitsOf(arith::TruncFOp::create(b, elementType, x));
    };
    return pack(bits(lo), bits(hi));
  }
  /// Half `high` of a word as f32.
  Value unpack(Value word, bool high);
  /// Element (row, col) of a 16-bit tensor as bits, 0 when `valid` is
  /// false (the indices are clamped, so nothing is read out of bounds).
  /// `outer` indexes the first dimension (the batch row, or a pool's page).
  Value loadBits(Value memref, Value outer, Value head, Value row, Value col,
                 Value valid, int64_t rowLimit, int64_t colLimit);

  /// Q's A fragment for D columns [16 kc, 16 kc + 16).
  SmallVector<Value> queryFragment(int64_t kc);
  /// Chunk `chunk` of staged row `row` as stored (the swizzle).
  Value swizzle(Value row, Value chunk, int64_t rowChunks);
  /// Copies `total` rows of `src` (rows of rowLimit, columns [0, dim)) to
  /// `tiles`: row r comes from (outer, head, row) = sourceOf(r), or is
  /// zeros where sourceOf says it is not valid, and lands at staged row
  /// stagedAt(r).
  using SourceRowFn =
      function_ref<std::tuple<Value, Value, Value, Value>(Value r)>;
  void stageRows(Value tiles, int64_t rowChunks, Value src, int64_t rowLimit,
                 int64_t dim, int64_t total, SourceRowFn sourceOf,
                 function_ref<Value(Value)> stagedAt);
  /// Row p of the query tile: its head, its query row (clamped to a valid
  /// one) and whether it is a real row (GpuKernelEmitter::packedHeads).
  std::tuple<Value, Value, Value> tileRow(Value p);
  bool packsQueryHeads() const override { return true; }
  /// finishScore for row r's head.
  Value finishRowScore(Value x, int r, Value j, bool masked) {
    Value head = headIv;
    headIv = rowHead[r];
    Value result = finishScore(x, rowIndex[r], j, masked);
    headIv = head;
    return result;
  }
  /// ldmatrix.x`count` (.trans with `transpose`): this lane addresses chunk
  /// `chunk` of staged row `row`; one 32-bit word per matrix.
  SmallVector<Value> loadMatrices(Value tiles, int64_t rowChunks, Value row,
                                  Value chunk, int64_t count, bool transpose);
  SmallVector<Value> emulatedLoadMatrices(Value tiles, Value row, Value wordCol,
                                          int64_t count, bool transpose);

  bool stagesAsynchronously() const override { return true; }
  void commitStage() override {
    if (asyncCopies)
      NVVM::CpAsyncCommitGroupOp::create(b);
  }
  void waitForStages(int64_t pending) override {
    if (asyncCopies)
      NVVM::CpAsyncWaitGroupOp::create(b, pending);
  }

  /// D = A B + C on one warp's fragments.
  SmallVector<Value> mma(ArrayRef<Value> a, ArrayRef<Value> bWords,
                         ArrayRef<Value> c);
  SmallVector<Value> emulatedMma(ArrayRef<Value> a, ArrayRef<Value> bWords,
                                 ArrayRef<Value> c);
  /// exp of a score difference in the scores' units.
  Value expOfScore(Value x) { return log2Scores ? api->exp2(b, x) : exp(x); }
  /// x combined with the x of lanes l ^ 1 and l ^ 2 (one row's quad).
  Value quadReduce(Value x, bool sum);

  /// Elements of a 16-byte chunk of a staged row.
  int64_t chunkElements() const { return 16 / elementBytes; }
  /// An f32 word rounded to TF32 (round to nearest, ties away), as the mma
  /// takes it.
  Value toTf32(Value word);
  /// P V on TF32 m16n8k8 steps (the 16-bit kernel's is in processTile).
  void accumulateTf32(ArrayRef<SmallVector<Value>> p,
                      SmallVector<SmallVector<Value>> &acc);

  /// One m16n8k16 (16-bit) or m16n8k8 (TF32) mma: mma() without the
  /// 3xTF32 split.
  SmallVector<Value> mmaOnce(ArrayRef<Value> a, ArrayRef<Value> bWords,
                             ArrayRef<Value> c);
  /// The TF32 high parts of f32 words and their low parts (word - high).
  std::pair<SmallVector<Value>, SmallVector<Value>>
  splitWords(ArrayRef<Value> words);

  Type elementType; // f16 or bf16, or f32 on TF32
  bool tf32 = false;
  /// f32 products as 3xTF32 (three mma each) rather than one TF32 mma.
  bool splitTf32 = false;
  int64_t elementBytes = 2;
  int64_t dChunks = 0, paddedDim = 0, valueTiles = 0, paddedValueDim = 0;
  /// Whether tiles are staged with cp.async (CUDA, D and Dv multiples of
  /// 8), and whether scores are kept in log2 units (no mods to apply).
  bool asyncCopies = false, log2Scores = false;
  Value warp, lane, g, c4, warpRow, warpBase;
  Value rowIndex[2], rowActive[2], rowInTile[2], rowHead[2];
  /// Q's A fragments in registers ([dChunks][4]), or Q's rows in
  /// workgroup memory (`queryRows`, read with ldmatrix per tile).
  SmallVector<SmallVector<Value>> qFragments;
  Value queryRows;
  Value keyRows, valueRows;       // staged tiles, workgroup memory
  Value mmaA, mmaB, rowAddresses; // Vulkan emulation
};

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPUMMAFLASHKERNEL_H
