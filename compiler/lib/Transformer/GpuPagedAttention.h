//===- GpuPagedAttention.h - paged KV caches on a GPU -----------*- C++ -*-===//
//-*-===//
//
// The SelfPaged kernel (LayerStack.h) of a GPU layer stack: the stack's
// page pools stay on the device between calls. The stack appends each
// call's key and value rows to its host pools (LayerStack::Impl::
// writePages) and then calls the kernel over kv_length rows, the last Lq of
// which are the new ones; only those rows go to the device's copy of the
// pool. Every row a kernel reads was appended by an earlier (or this) call,
// so the device copy holds it.
//
// forward() with a cache reads its KvRows the same way (AttentionBlock::
// SelfCacheRows): one page of the cache's capacity per sequence. When a
// stack's self-attention runs as one chain on the device
// (deviceLaunches), the chain appends the new rows to the device's copy
// itself, and nothing is copied but stale pools. A pool is
// known by its owner (KernelOperand::owner) and version: a new one, or one
// whose rows moved (growth, a shift), is copied whole; copies no call used
// for a while are freed.
//
// GPU kernels take static shapes: one is compiled per Sizes, queries and
// table pages at capacities (capacityFor), so a decoding step runs the
// kernel of its length's capacity (docs/Gpu.md, "Paged KV caches").
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMPILER_TRANSFORMER_GPUPAGEDATTENTION_H
#define ATTN_COMPILER_TRANSFORMER_GPUPAGEDATTENTION_H

#include "attn/Compiler/GpuCompiler.h"
#include "attn/Runtime/LayerStack.h"
#include <functional>
#include <map>
#include <tuple>

namespace attnrt {

class GpuPagedAttention {
public:
  /// What a compiled kernel is for: queries and table pages at capacities.
  struct Sizes {
    int64_t batch, queries, poolPages, pageRows, tablePages;
    bool operator<(const Sizes &o) const {
      return std::tie(batch, queries, poolPages, pageRows, tablePages) <
             std::tie(o.batch, o.queries, o.poolPages, o.pageRows,
                      o.tablePages);
    }
  };
  /// Compiles the paged kernel for `sizes`; `function` receives its name.
  using Compile = std::function<llvm::Expected<std::unique_ptr<GpuKernel>>(
      const Sizes &sizes, std::string &function)>;

  /// `operandNames`: the kernel's inputs (q, k_pages, v_pages, page_table,
  /// kv_length and variant operands), as the stack hands them over.
  GpuPagedAttention(std::vector<std::string> operandNames,
                    int64_t (*capacityFor)(int64_t), Compile compile)
      : names(std::move(operandNames)), capacityFor(capacityFor),
        compile(std::move(compile)) {}

  /// AttentionKernel::call: f32 operands in host memory, the pools with
  /// their owners and versions (KernelOperand).
  Status call(const std::vector<KernelOperand> &inputs,
              const KernelOperand &output);

  /// AttentionKernel::pagedDeviceLaunches: the kernel's launches on device
  /// q and output, the pools synced but for their last `length` rows.
  Status deviceLaunches(const AttentionKernel::PagedDeviceOperands &on,
                        GpuBuffer *pools[2], std::vector<GpuLaunch> &launches);
  /// The query rows a call of `lq` queries runs: one decoding step's
  /// stays one, else its capacity.
  int64_t queryRows(int64_t lq) const { return lq == 1 ? 1 : capacityFor(lq); }

  /// A kernel `compile` made already.
  void adopt(const Sizes &sizes, std::unique_ptr<GpuKernel> kernel,
             std::string function) {
    compiled[sizes] = {std::move(kernel), std::move(function)};
  }
  /// Kernels compiled so far.
  int64_t variants() const { return int64_t(compiled.size()); }

  /// What went to the device's pools so far: pools copied whole, and
  /// key or value rows of one KV head appended.
  struct Copies {
    int64_t wholePools = 0, rows = 0;
    uint64_t wholeBytes = 0, rowBytes = 0;
  };
  const Copies &copies() const { return copied; }

private:
  struct Compiled {
    std::unique_ptr<GpuKernel> kernel;
    std::string function;
  };
  /// The device's copy of a pool: its version and size, and the call that
  /// last used it.
  struct Mirror {
    std::shared_ptr<GpuBuffer> buffer;
    uint64_t version = 0, bytes = 0;
    uint64_t lastCall = 0;
  };
  /// The kernel for `batch` sequences of `lq` queries over pools of
  /// `poolPages` pages of `pageRows` rows, tables of `listed` pages and
  /// `kvLength` keys (compiled on first use); `sizes` receives what it is
  /// compiled for, `table` the table `pages` padded to its pages.
  llvm::Expected<Compiled *> kernelFor(int64_t batch, int64_t lq,
                                       int64_t poolPages, int64_t pageRows,
                                       const int32_t *pages, int64_t listed,
                                       int64_t kvLength, Sizes &sizes);
  /// Frees, now and then, the copies of pools no call used lately (a
  /// sequence gone, a pool that grew); one needed again is copied whole.
  void forgetUnused();
  /// Brings the device's copy of `pool` up to date: whole when its owner,
  /// version or size is new, else rows [first, kvLength) of each sequence
  /// whose pages `table` [B, tablePages] lists.
  Status syncPool(GpuDevice &device, const KernelOperand &pool,
                  const int32_t *table, int64_t batch, int64_t tablePages,
                  int64_t first, int64_t kvLength, GpuBuffer *&buffer);

  std::vector<std::string> names;
  int64_t (*capacityFor)(int64_t);
  Compile compile;
  std::map<Sizes, Compiled> compiled;
  std::map<const void *, Mirror> mirrors;
  uint64_t calls = 0;
  Copies copied;
  // Padded operands, kept between calls.
  std::vector<float> paddedQueries, paddedResult;
  std::vector<int32_t> table;
  // The table and length of deviceLaunches, on the device.
  std::shared_ptr<GpuBuffer> tableBuffer, lengthBuffer;
};

} // namespace attnrt

#endif // ATTN_COMPILER_TRANSFORMER_GPUPAGEDATTENTION_H
