//===- GpuKernelEmitter.h - what the GPU attention kernels share -*- C++
//-*-===//
//
// The skeleton of every GPU attention kernel (GpuFlashKernel.h): the
// gpu.func and its launch attributes, the workgroup's (query tile, head,
// batch), the walk over the key tiles of the schedule (or of run-time tile
// classes), the choice between masked and mask-free tiles, tile counting,
// and the score of one (query row, key) with its mods, region and mask.
// Two kernels fill it in:
//
//   ScalarFlashEmitter (GpuFlashKernel.cpp): one invocation per query row,
//     f32 arithmetic; every target and element type.
//   MmaFlashEmitter (GpuMmaFlashKernel.cpp): one warp per 16 query rows,
//     both products of a tile on m16n8k16 tensor-core fragments
//     (mma.sync) for f16 / bf16 on CUDA; on Vulkan the same kernel with
//     each mma carried out through workgroup memory, so that the suite
//     runs its fragment bookkeeping on lavapipe.
//   WgmmaFlashEmitter (GpuWgmmaFlashKernel.cpp): the same with both
//     products as warpgroup mma (wgmma, sm_90a) on 128-byte swizzled
//     workgroup memory; emulated on Vulkan the same way.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_ATTNTOGPU_GPUKERNELEMITTER_H
#define ATTN_CONVERSION_ATTNTOGPU_GPUKERNELEMITTER_H

#include "GpuCodegen.h"
#include "GpuFlashKernel.h"

namespace mlir::attn {

/// K and V that a kernel reads in place through one page table: both
/// from attn.paged_kv of one table and length, the pools and the table
/// arguments of the host, the length a constant or element 0 of a [1] i32
/// argument (docs/Gpu.md, "Paged KV caches").
struct PagedKeys {
  PagedKvOp keys, values;
  /// The length's [1] i32 argument, or null for `constantLength`.
  Value lengthArgument;
  int64_t constantLength = 0;
};

/// The paged K and V of `op`; nothing when K is not paged, or when K and V
/// are paged in a form the kernels do not read (then `why` says so).
std::optional<PagedKeys> matchPagedKeys(func::FuncOp host, OnlineAttentionOp op,
                                        std::string &why);

class GpuKernelEmitter : public GpuCodegen {
public:
  GpuKernelEmitter(func::FuncOp host, TiledAttention attention,
                   const KernelPlan &plan, const TargetDescription &target,
                   bool countTiles)
      : GpuCodegen(host, target), op(attention.tile), plan(plan),
        countTiles(countTiles) {}
  virtual ~GpuKernelEmitter() = default;

  gpu::GPUFuncOp build(gpu::GPUModuleOp module);
  /// The most workgroups one query tile's key tiles are split over.
  int64_t maxKeySplits = 64;

protected:
  // The kernel's parts.
  /// Invocations of one workgroup.
  virtual int64_t invocations() const = 0;
  /// Values every tile needs (query fragments, workgroup buffers).
  virtual void prologue() = 0;
  /// The online softmax state before the first key tile.
  virtual SmallVector<Value> initialState() = 0;
  /// Copies key tile rows [j0, j0 + tk) to workgroup memory.
  virtual void stageTile(Value j0, Value tk) = 0;
  /// The state after the staged tile, `masked` or not.
  virtual SmallVector<Value> processTile(ValueRange state, Value j0, Value tk,
                                         bool masked) = 0;
  /// Whether stageTile's copies complete asynchronously (cp.async): the
  /// ring then waits for a tile's copy group before computing it.
  virtual bool stagesAsynchronously() const { return false; }
  /// Closes the copies stageTile issued since the last call into one group.
  virtual void commitStage() {}
  /// Waits until at most `pending` copy groups are still in flight.
  virtual void waitForStages(int64_t pending) {}
  /// O from the final state.
  virtual void storeResult(ValueRange state) = 0;
  /// Whether the kernel can split its key tiles over workgroups, and the
  /// partial result (unnormalized O, then m and l, per row of the tile) of
  /// its share into `partials` [workgroup][row][Dv + 2] at `workgroup`.
  virtual bool splitsKeys() const { return false; }
  /// Whether the kernel can hold the query rows of every head of a KV head
  /// in one workgroup (GQA decoding): then `packedHeads` = group, headIv is
  /// the group's first head and row p of the tile is query row
  /// p % queryLen of head headIv + p / queryLen.
  virtual bool packsQueryHeads() const { return false; }
  virtual void storePartials(ValueRange state, Value workgroup) {}

  /// The score of query row i and key j from the raw q.k (scaled,
  /// soft-capped, mods, score region; -inf where `masked` and dropped).
  Value finishScore(Value s, Value i, Value j, bool masked);
  float scale();

  OnlineAttentionOp op;
  const KernelPlan &plan;
  bool countTiles;

  // Sizes.
  int64_t batch = 0, queryLen = 0, keyLen = 0, headDim = 0, valueDim = 0,
          group = 1, numQueryTiles = 0, numKeyTiles = 0;
  int64_t keyTile = 0, rows = 0;
  /// K and V read through a page table: the table, the rows of a page and
  /// the pages of the pools. keyLen is then the capacity (the table's
  /// pages times their rows) and keyCount the length, read at run time.
  std::optional<PagedKeys> paged;
  Value tableBuf;
  int64_t pageRows = 0, numPages = 0;
  /// The number of keys: keyLen, or a paged cache's length clamped to
  /// [0, keyLen].
  Value keyCount;
  /// Key tiles of keyCount keys.
  Value keyTileCount();
  /// Indices 0 and 2 of key `row` in K and V: (batch row, row), or through
  /// the table (page, row in the page) with the page clamped to the pool.
  std::pair<Value, Value> keyRowAt(Value row);
  // Values of the kernel body.
  Value queryBuf, keyBuf, valueBuf, outBuf, scheduleBuf, countBuf;
  Value tileIv, kvHead, tid, first, tileRows;
  /// Workgroups per query tile sharing its key tiles (1: no split), this
  /// workgroup's share, and the partial results' buffer.
  int64_t splits = 1;
  int64_t packedHeads = 1;
  Value splitIv, partialsBuf;
  /// Stages of the workgroup buffers (1, or the target's pipeline depth:
  /// the next tiles are copied while this one is computed) and the one
  /// stageTile / processTile use.
  int64_t depth = 1;
  Value stageSlot;
  /// With packed heads: the head and the query row (in the tile) of tile
  /// row p, for the group whose first head is `firstHead`.
  std::pair<Value, Value> unpackRow(Value firstHead, Value p);
  /// body(e) for this invocation's strided share of [0, total): e = tid,
  /// tid + invocations(), ... (how every kernel stages its tiles).
  void forEachShare(int64_t total, function_ref<void(Value e)> body);
  /// Row r of the staged tile in buffers of depth x keyTile rows.
  Value stagedRow(Value r) {
    if (depth == 1)
      return r;
    return arith::AddIOp::create(
        b, arith::MulIOp::create(b, stageSlot, idx(keyTile)), r);
  }

private:
  void emitBody();
  /// The kernel `<name>_merge` of a split launch: per query row, O from
  /// the splits' partial results.
  void buildMergeKernel(gpu::GPUModuleOp module);
  /// [lo, hi) of this workgroup's share of key tiles (or schedule
  /// entries) [begin, end).
  std::pair<Value, Value> splitRange(Value begin, Value end);
  /// The state after key tiles tileOf(e) for e in [lo, hi), staged in
  /// `depth` stages; tileOf gives (key tile, isFull or null).
  SmallVector<Value>
  visitKeyTiles(ValueRange state, Value lo, Value hi,
                function_ref<std::pair<Value, Value>(Value)> tileOf);
  /// One tile, staged and computed (one stage).
  SmallVector<Value> visitKeyTile(ValueRange state, Value keyTileIndex,
                                  Value isFull);
  /// One staged tile: masked or not, and counted.
  SmallVector<Value> computeKeyTile(ValueRange state, Value keyTileIndex,
                                    Value isFull);
  /// j0 and the number of keys of a key tile.
  std::pair<Value, Value> keyRange(Value keyTileIndex);
  Value argumentFor(Value value) {
    return kernel.getArgument(cast<BlockArgument>(value).getArgNumber());
  }
  unsigned scheduleArg = 0, countArg = 0;
  std::vector<int32_t> scheduleWords;
};

/// Whether the tensor-core kernel serves this attention: 16-bit inputs (or
/// f32 ones unless `f32Mma` is None) on CUDA (or Vulkan with `emulateMma`),
/// key tiles a multiple of 16.
bool usesMmaKernel(TiledAttention attention, const KernelPlan &plan,
                   const TargetDescription &target, bool emulateMma,
                   F32Mma f32Mma);

/// Whether sm_90a's warpgroup kernel serves this attention: the tensor-core
/// kernel's inputs (16-bit) on a target with 64-row warpgroup mma shapes
/// (or Vulkan with `emulateWgmma`), head dims whole 64-element swizzle
/// atoms (D and Dv multiples of 64, Dv at most 256).
bool usesWarpgroupMmaKernel(TiledAttention attention, const KernelPlan &plan,
                            const TargetDescription &target, bool emulateWgmma);

std::unique_ptr<GpuKernelEmitter>
makeScalarFlashEmitter(func::FuncOp host, TiledAttention attention,
                       const KernelPlan &plan, const TargetDescription &target,
                       bool countTiles);
std::unique_ptr<GpuKernelEmitter>
makeMmaFlashEmitter(func::FuncOp host, TiledAttention attention,
                    const KernelPlan &plan, const TargetDescription &target,
                    bool countTiles, F32Mma f32Mma);
std::unique_ptr<GpuKernelEmitter>
makeWgmmaFlashEmitter(func::FuncOp host, TiledAttention attention,
                      const KernelPlan &plan, const TargetDescription &target,
                      bool countTiles);

} // namespace mlir::attn

#endif // ATTN_CONVERSION_ATTNTOGPU_GPUKERNELEMITTER_H
