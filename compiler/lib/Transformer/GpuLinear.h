//===- GpuLinear.h - a GPU layer stack's products on the device -*- C++ -*-===//
//
// The LinearBackend of a layer stack on a GPU (TransformerOptions::
// gpuLinears): its projections and feed-forward products run as the GEMM
// kernels of GpuLinearKernel.cpp on the stack's device. Each weight is
// uploaded once, when the stack is created, and stays there (a bias when
// first used); a product writes its rows of x into a device buffer, runs
// the kernel, whose epilogue adds the bias and applies the activation or
// SwiGLU's gate, and reads its rows back; a residual sum is added then, on
// the host (sending the stream's rows in would cost as much as the add).
// A feed-forward block runs as one chain (feedForward): its hidden units
// stay on the device between its products, and its products go to the
// device in one submission.
//
// Self-attention runs as one chain too (selfAttention,
// GpuAttentionChains.cpp): the QKV product, layout kernels that split its
// rows into heads, RoPE's element-wise kernels where the layer has RoPE,
// (a decoder's) insertion kernels that append k and v to its KV cache on
// the device, the attention kernel, a layout kernel that merges the heads
// back into rows, and the output product, in one submission: Q, K and V
// never leave the device. Cross-attention likewise (crossAttention): the
// Q product, its split, the kernel on the memory's keys and values (copied
// once per memory), the merge and the output product.
//
// GPU kernels take static shapes: one is compiled per (in, out) and row
// capacity (8, 256, then multiples of 2048), and a product of `rows` rows
// runs the kernel of its capacity on its first `rows` rows: only the
// workgroups of the row tiles that hold them are launched (rows are
// independent; rows past them in the last tile are not read back), so a
// larger capacity costs memory for its buffers, not work.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_COMPILER_TRANSFORMER_GPULINEAR_H
#define ATTN_COMPILER_TRANSFORMER_GPULINEAR_H

#include "attn/Compiler/GpuCompiler.h"
#include "attn/Runtime/HalfFloat.h"
#include "attn/Runtime/LayerStack.h"
#include "mlir/IR/MLIRContext.h"
#include <map>
#include <memory>
#include <tuple>

namespace attnrt {

class GpuLinearBackend : public LinearBackend {
public:
  /// Products for `options.target`'s device; weights kept in `format` (a
  /// 16-bit layer's in 16 bits, widened as the kernels read them).
  /// Null with `error` set when the target's device cannot be opened.
  static std::shared_ptr<GpuLinearBackend>
  create(const GpuCompileOptions &options, FloatFormat format,
         std::string &error);

  Status prepare(int64_t out, int64_t in, const std::vector<float> &weight,
                 std::shared_ptr<const Weight> &prepared) override;
  Status accumulate(const float *x, int64_t rows, const Weight &weight,
                    float *y) override;
  FloatFormat weightFormat() const override { return format; }
  bool fusesEpilogues() const override { return true; }
  bool chainsFeedForward() const override { return true; }
  Status feedForward(const float *x, int64_t rows, const FeedForward &block,
                     const float *residual, float *y) override;
  Status apply(const float *x, int64_t rows, const Weight &weight,
               const LinearEpilogue &epilogue, const float *bias,
               const float *other, float *y) override;
  bool chainsCrossAttention(const AttentionKernel &kernel) const override {
    return chainAttention && kernel.deviceLaunches && kernel.deviceCopy;
  }
  Status crossAttention(const float *x, const CrossAttention &block,
                        const float *residual, float *y) override;
  bool chainsSelfAttention(const AttentionKernel &kernel) const override {
    return chainAttention &&
           (kernel.deviceLaunches || kernel.pagedDeviceLaunches);
  }
  /// Whether chainsSelfAttention and chainsNorms may say yes
  /// (TransformerOptions::gpuChains).
  bool chainAttention = true;
  /// A chain with a BlockNorm runs it as a row kernel
  /// (GpuRowReductionKernel.cpp) on the stream h it writes to the device,
  /// its last product adding h there.
  bool chainsNorms() const override { return chainAttention; }
  Status selfAttention(const float *x, const SelfAttention &block,
                       const float *residual, float *y) override;

  /// What ran so far: products, kernels compiled, submissions to the
  /// device (a feed-forward block's products share one), bytes of weights on
  /// the device, bytes of operands copied in and of results copied back, and
  /// bytes of results the next product read on the device (a feed-forward
  /// block's hidden units).
  /// Chained attention blocks count their products, their submission and
  /// their bytes (the key bias, a decoder's insertion row in; the output
  /// rows and a decoder's new K and V rows out; the Q or QKV product's
  /// result and the merged heads kept), their blocks apart (self-attention:
  /// attentionBlocks, cross-attention: crossBlocks) and their split, merge,
  /// RoPE and insertion kernels (layoutKernels). Norms run in chains
  /// (BlockNorm) are counted apart too.
  struct Stats {
    int64_t products = 0, kernels = 0, submissions = 0;
    uint64_t weightBytes = 0, inputBytes = 0, outputBytes = 0, keptBytes = 0;
    int64_t attentionBlocks = 0, crossBlocks = 0, layoutKernels = 0;
    int64_t norms = 0;
  };
  const Stats &stats() const { return counted; }

  /// The row capacity a kernel is compiled for to serve `rows` rows.
  static int64_t rowCapacity(int64_t rows);

private:
  GpuLinearBackend(const GpuCompileOptions &options, FloatFormat format,
                   std::shared_ptr<GpuDevice> device);

  /// A weight on the device, [out, in] as read.
  struct DeviceWeight : Weight {
    int64_t in = 0, out = 0;
    std::shared_ptr<GpuBuffer> buffer;
    int64_t bytes() const override { return int64_t(buffer->bytes()); }
  };

  /// A kernel for one (in, out, row capacity, epilogue) and the device
  /// buffers of its x, other operand and y.
  struct Product {
    std::unique_ptr<GpuKernel> kernel;
    std::shared_ptr<GpuBuffer> x, other, y;
  };
  llvm::Expected<Product *> productFor(int64_t in, int64_t out,
                                       int64_t capacity,
                                       const LinearEpilogue &epilogue);
  /// An operand: host rows (copied to the product's buffer) or a device
  /// buffer (bound in place).
  struct Source {
    const float *host = nullptr;
    GpuBuffer *device = nullptr;
  };
  /// Queues the product of `weight` on `rows` rows finished by `epilogue`
  /// (its operands written); readBack submits what is queued, so its
  /// result lands in the product's y buffer.
  llvm::Expected<Product *> launch(const Weight &weight, int64_t rows,
                                   const LinearEpilogue &epilogue, Source x,
                                   const float *bias, Source other);
  /// Runs the queued launches in one submission.
  Status submit();
  /// Where a product's rows for the host lie in its result: `sequences`
  /// runs of `rows` rows, run s from row s * `stride` + `first` (a chained
  /// attention's sequences, each at the end of its capacity).
  struct RowRuns {
    int64_t sequences, stride, first;
  };
  /// Runs the queued launches in one submission and copies the first
  /// `rows` rows of `result` (of rows of `out`; or the runs of `runs`) to
  /// `y`, adding `residual` when given.
  Status readBack(GpuBuffer &result, int64_t rows, int64_t out, float *y,
                  const float *residual = nullptr, RowRuns runs = {1, 0, 0});
  /// A chain's x, `rows` rows of `width` from the host. With a BlockNorm
  /// they go to the stream buffer of their row capacity (`stream`, which
  /// the chain's last product adds: chainOutput), and pre-norm's norm of
  /// them is queued; `source` is what the chain's first products read.
  struct ChainInput {
    Source source;
    GpuBuffer *stream = nullptr;
  };
  llvm::Expected<ChainInput> chainInput(const float *x, int64_t rows,
                                        int64_t width, const BlockNorm *norm);
  /// A chain's last product on `x` (`rows` rows), finished by `bias` and,
  /// with a BlockNorm, the residual from `input`'s stream and post-norm's
  /// norm (queued): the buffer that holds the chain's output rows.
  llvm::Expected<GpuBuffer *> chainOutput(const Weight &weight, int64_t rows,
                                          Source x, const float *bias,
                                          const ChainInput &input,
                                          const BlockNorm *norm);
  /// Queues `norm` on rows [rows, width] of `in` (a buffer of their row
  /// capacity); returns the buffer it writes.
  llvm::Expected<GpuBuffer *> queueNorm(const BlockNorm &norm, GpuBuffer *in,
                                        int64_t rows, int64_t width);
  /// An epilogue that adds `bias` (when not null) and applies `activation`.
  static LinearEpilogue biasEpilogue(
      const float *bias,
      LinearEpilogue::Activation activation = LinearEpilogue::Activation::None);
  /// The device copy of a stack's bias (`out` floats at `bias`: the
  /// stack's weights live as long as this backend, so their addresses name
  /// them), or of an attention's variant operand.
  llvm::Expected<GpuBuffer *> deviceBias(const float *bias, int64_t out);
  /// Those copies of a chain's variant operands (SelfAttention::operands).
  llvm::Error deviceOperands(const std::vector<KernelOperand> &operands,
                             std::vector<GpuBuffer *> &buffers);

  /// A chained self-attention's layout kernels and the buffers between
  /// them, for one (batch, capacity, heads, KV heads, head dim):
  /// q, k, v and the kernel's output heads [B, H(kv), capacity, D], the key
  /// bias [B, 1, 1, capacity], the heads merged into rows [B capacity, H D].
  struct HeadLayouts {
    std::unique_ptr<GpuKernel> split[3], merge;
    std::shared_ptr<GpuBuffer> parts[3], keyBias, heads, merged;
    /// The sequence length keyBias masks for (-1: not written yet).
    int64_t biasLength = -1;
    /// With RoPE: the kernels that rotate q and k into `rotated`, and the
    /// cosine and sine tables [capacity, D / 2] of the (length, first
    /// position) in `tablesFor`.
    std::unique_ptr<GpuKernel> rope[2];
    std::shared_ptr<GpuBuffer> rotated[2], cosines, sines;
    std::pair<int64_t, int64_t> tablesFor{-1, 0};
  };
  llvm::Expected<HeadLayouts *> headLayoutsFor(const SelfAttention &block,
                                               int64_t capacity);
  /// Queues the RoPE kernels of a chained self-attention on q and k
  /// (layout.parts), their tables written first when the call's length or
  /// first position is new.
  Status rotate(const SelfAttention &block, int64_t capacity, int64_t length,
                HeadLayouts &layout);
  /// A chained cross-attention's layout kernels and buffers, for one
  /// (batch, query capacity, key capacity, heads, head dim): the split of
  /// the Q product's rows [B capacity, H D] into q [B, H, capacity, D], the
  /// merge of the kernel's output heads back into rows, and the key bias
  /// [B, 1, 1, key capacity] masking the key rows before the memory's.
  struct QueryLayouts {
    std::unique_ptr<GpuKernel> split, merge;
    std::shared_ptr<GpuBuffer> q, keyBias, heads, merged;
    /// The memory length keyBias masks for (-1: not written yet).
    int64_t biasKeys = -1;
  };
  llvm::Expected<QueryLayouts *> queryLayoutsFor(const CrossAttention &block);
  /// A chain's last steps: `merge` of the attention's `heads` into rows
  /// `merged`, the output product on them, the submission, and each
  /// sequence's `length` rows from the end of its `capacity` into `y`
  /// (plus `residual`). `projected`: the width of the chain's first
  /// product, whose result stayed on the device (counted as kept).
  Status finishChain(GpuKernel &merge, GpuBuffer *heads, GpuBuffer *merged,
                     int64_t projected, const Weight &o, const float *oBias,
                     int64_t batch, int64_t capacity, int64_t length,
                     const ChainInput &input, const BlockNorm *norm,
                     const float *residual, float *y);
  /// Queues `function` of `kernel` on device buffers `in` and `out`.
  Status queueLayout(GpuKernel &kernel, const char *function, GpuBuffer *in,
                     GpuBuffer *out);
  /// A decoder's chain: queues the insertion kernels that append the
  /// call's `keys` and `values` [B, Hkv, capacity, D] (its rows last) to
  /// the device's `pools` at rows [keyLength - length, keyLength).
  Status appendRows(const SelfAttention &block, int64_t capacity,
                    GpuBuffer *keys, GpuBuffer *values, GpuBuffer *pools[2]);
  /// After the submission: those rows, from `keys` and `values` into the
  /// host's pools.
  Status readNewRows(const SelfAttention &block, int64_t capacity,
                     GpuBuffer *keys, GpuBuffer *values);
  /// A GpuKernel of one function's MLIR text.
  llvm::Expected<std::unique_ptr<GpuKernel>>
  compileKernel(const std::string &source);

  GpuCompileOptions options;
  FloatFormat format;
  std::shared_ptr<GpuDevice> device;
  mlir::MLIRContext context{mlir::MLIRContext::Threading::DISABLED};
  std::map<std::tuple<int64_t, int64_t, int64_t, LinearEpilogue>, Product>
      products;
  std::map<const float *, std::shared_ptr<GpuBuffer>> biases;
  /// By (batch, capacity, heads, KV heads, head dim, RoPE: 0 none, 1
  /// halves, 2 interleaved).
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int>,
           HeadLayouts>
      layouts;
  /// By (batch, query capacity, key capacity, heads, head dim).
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>,
           QueryLayouts>
      queryLayouts;
  /// Insertion kernels by (batch, KV heads, capacity, pool rows, head
  /// dim), and the row they insert at.
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>,
           std::unique_ptr<GpuKernel>>
      appends;
  std::shared_ptr<GpuBuffer> appendAt;
  /// Norm kernels and their results by (row capacity, width, RMSNorm,
  /// bias, eps), and the stream buffers of chains with a BlockNorm by (row
  /// capacity, width).
  struct NormKernel {
    std::unique_ptr<GpuKernel> kernel;
    std::shared_ptr<GpuBuffer> y;
  };
  std::map<std::tuple<int64_t, int64_t, bool, bool, double>, NormKernel>
      normKernels;
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<GpuBuffer>> streams;
  std::vector<float> newRows; // readNewRows's
  std::vector<float> scratch;
  /// Launches queued since the last submission.
  std::vector<GpuLaunch> pending;
  Stats counted;
};

} // namespace attnrt

#endif // ATTN_COMPILER_TRANSFORMER_GPULINEAR_H
