//===- Passes.td - attn conversion passes ------------------*- tablegen -*-===//
//
// Conversions out of the attn dialect: the consumers of the tiled form
// (docs/Design.md), one folder each under passes/lib/Conversion/, and the
// lowering of attn.fourier_mix to a runtime call.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_CONVERSION_PASSES_TD
#define ATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnLowerAttentionGrad
    : Pass<"attn-lower-attention-grad", "ModuleOp"> {
  let summary = "Lower attn.attention_grad to tiled loops of linalg on tensors";
  let description = [{
    The generic backward of softmax attention (FlashAttention-2's algorithm,
    docs/Dialect.md "Backward"), in two race-free passes that recompute the
    probabilities per tile from Q, K and lse: dQ over (batch, query head,
    query tile) looping over key tiles, and dK, dV over (batch, key/value
    head, key tile) looping over the group's query heads and the query
    tiles. Tiles the pattern drops are skipped in both (the forward's tile
    classes). Accumulation is f32 whatever the element type.

    Supported: every mask pattern the generic forward supports, the dense
    mask and bias operands, soft-cap and the additive mods (ALiBi, Shaw and
    T5 tables, adaptive span). The score region and distance_weight have no
    derivative here yet: an error at the op.
  }];
  let options = [
    Option<"queryTile", "query-tile", "int64_t", "64",
           "query rows per tile">,
    Option<"keyTile", "key-tile", "int64_t", "64", "key rows per tile">,
    Option<"countTiles", "count-tiles", "bool", "false",
           "report the tiles each pass visits to "
           "attn_record_backward_tiles (attn-run --backward --stats)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def AttnLowerOnlineAttention
    : Pass<"attn-lower-online-attention", "ModuleOp"> {
  let summary = "Lower the tiled form's ops to loops of linalg on tensors";
  let description = [{
    The generic lowering of the tiled form, for any target: each
    `attn.online_attention` becomes an `scf.for` over key tiles carrying
    the state (m, l, acc) as iter_args; each key tile is classified with
    the mask algebra at run time, empty ones skipped, full ones computed
    without mask code. Tile products and the softmax update are
    `linalg.generic` ops on tensor slices, so the L x L score matrix is
    never materialized; inputs of other float types are extended to f32.
    `attn.finalize_tile` becomes acc / l (0 where l = 0).

    Supported: every mask pattern (random blocks need static sizes; random
    blocks, block layouts and segments are evaluated per element), the
    dense mask and bias operands, every score mod (static head counts) and
    the custom score region. Anything else is reported as an error.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

def AttnKernelizedToCpu : Pass<"attn-kernelized-to-cpu", "ModuleOp"> {
  let summary = "Lower feature-map (linear) attention to CPU kernels";
  let description = [{
    `attn.kernelized` with an element-wise feature map (`elu_plus_one`,
    `relu`) or RFA (causal or not) or causal FAVOR+, f32, and head dims and
    projection counts that are whole vectors of the module's `#attn.target`
    (features at most 1024) becomes register-blocked
    vector code instead of attn-decompose-kernelized's passes over [L, D]
    tensors:

    - non-causal, per (batch, key/value head): S = phi(K)^T V [D, Dv] and
      z = sum_j phi(k_j), key tiles of 64 rows; phi of a tile is written
      once into a scratch (summed into z on the way) and S's register
      blocks are updated with broadcasts of it and rows of V read in place;
      then per (batch, query head, block of 64 query rows): phi(Q) of the
      block into a scratch with its dots with z, and O = phi(Q) S in
      register blocks divided by them as they are stored (0 where 0);
    - causal, per (batch, key/value head), chunks of 64 rows: phi of the
      chunk's keys (and its transpose through registers), per query head
      of the group the scores phi(q_i) . phi(k_j) masked to j <= i, and
      O = phi(Q) S + scores V; then S and z take the chunk. With fewer
      (batch, key/value head) pairs than threads, the chunks run in
      parallel from the exclusive prefix sums of their states (not
      FAVOR+, whose running maximum is sequential).

    The random maps' features are register-blocked products with s W^T
    (written once before the calls), then [sin, cos] (RFA) or exp(t - max)
    (FAVOR+: S and z carry the largest key exponent so far and are
    rescaled when it grows). K, V and Q are each read once and O written
    once. What it does not cover (non-causal FAVOR+ runs as two softmax
    attentions) is left for attn-decompose-kernelized.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def AttnAttentionGradToCpu
    : Pass<"attn-attention-grad-to-cpu", "ModuleOp"> {
  let summary = "Lower attn.attention_grad to a fused vectorized CPU kernel";
  let description = [{
    The backward of softmax attention (docs/Dialect.md, "Backward") as one
    pass of FlashAttention-2's algorithm over key tiles: an `scf.forall`
    over (batch, key/value head, split) on buffers calling a function that,
    per 64-key tile, recomputes P from Q, K and lse for every 64-row query
    tile of the group's heads the pattern keeps, and computes S = Q K^T,
    dP = dO V^T, dV += P^T dO, dK += dS^T Q and dQ += dS K with
    register-blocked vector products (6 rows x 4 vectors of accumulators on
    AVX-512, 6 x 2 on AVX2). dK and dV of a key tile have one writer; dQ
    is summed per split (splits feed the threads when batch x key/value
    heads is small) and the splits' sums are added afterwards.

    Covered: f32, f16 and bf16 operands with f32 sums, static head dims,
    positional mask patterns (with static sizes, each key tile's query
    tiles listed at compile time from the forward's TileSchedule, so a
    sliding window costs time linear in the length; else classified at
    run time; full tiles without mask code), segment ids alone or AND-ed
    at the top (document masks: tiles whose id ranges are disjoint are
    skipped, ids compared per lane), bias and boolean mask operands
    without their gradients, soft-cap and lane-wise score mods. Ops with
    table patterns, Shaw / T5 tables, score regions or operand gradients
    are left for attn-lower-attention-grad.
  }];
  let options = [
    Option<"countTiles", "count-tiles", "bool", /*default=*/"false",
           "report the tiles visited to attn_record_backward_fused_tiles "
           "(attn-run --backward --stats)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::vector::VectorDialect"
  ];
}

def AttnToCpuKernels : Pass<"attn-to-cpu-kernels", "ModuleOp"> {
  let summary = "Lower the tiled form to vectorized flash kernels for CPUs";
  let description = [{
    Consumes attn-tile's output (docs/Design.md, "The tiled form"): each
    tiled attention it supports, tiled as the CPU plan for the module's
    `#attn.target` (cpu-avx2 without one) asks, becomes an `scf.forall`
    over (batch, query head, query tile) on
    buffers calling a tile function, the lowering of its
    `attn.online_attention` and `attn.finalize_tile`: the flash loop over
    key tiles written with register-blocked vector micro-kernels sized to
    the vector registers:

    - Q^T of the query tile is packed once with the scale folded in, so the
      scores are computed transposed, S^T = K_tile Q^T, in 6 x 64 blocks
      held in 24 vector registers;
    - the online softmax then works on whole vectors of queries: running
      max, exp and sums are vertical operations, never horizontal ones;
    - the accumulator is kept transposed, acc^T[Dv][TQ], updated in the
      same register blocks by acc^T += V_tile^T P^T and rescaled by
      exp(m_old - m_new).

    Score mods are applied lane-wise to every score tile; the tables of
    Shaw and T5 relative biases (the rel_table operand, T5's bucket table)
    are gathered per query lane.

    Mask patterns decide which key tiles run. With static sizes the key
    tiles of every query tile (and head, for head-dependent patterns) are
    listed at compile time (a TileSchedule, stored as constant tables) and
    only those are visited; partial ones evaluate the pattern per element,
    full ones carry no mask code. Otherwise each key tile is classified at
    run time. Segment ids (document masks) are tested per tile at run time
    from their min / max over the tile. Random blocks and block layouts
    are looked up once per tile and query; the key tile is shrunk to a
    divisor of their block size for that.

    Tiled attentions using features this fast path lacks (dense mask or
    bias operands, score regions, non-f32 types) or tiled otherwise are
    left for attn-lower-online-attention.
  }];
  let options = [
    Option<"countTiles", "count-tiles", "bool", /*default=*/"false",
           "call attn_record_tiles(query tile, key tile, visited, partial) "
           "once per query tile (for attn-run --stats)">,
    Option<"reportTiles", "report-tiles", "bool", /*default=*/"false",
           "emit a remark per op with the key tiles its schedule visits">,
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect",
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::x86vector::X86VectorDialect"
  ];
}

def AttnMatmulToCpuGemm : Pass<"attn-matmul-to-cpu-gemm", "ModuleOp"> {
  let summary = "Lower f32 linalg.matmul on buffers to a register-blocked GEMM";
  let description = [{
    Each f32 `linalg.matmul` on buffers whose B is stored [K, N] (the
    default maps) or [N, K] (transposed B: `indexing_maps` with (n, k)),
    and each `linalg.generic` multiply-add that reads B already packed in
    the GEMM's panels (maps (m, k), (n floordiv 2V, k, n mod 2V), (m, n):
    weights packed once), becomes a packed, register-blocked GEMM: A is
    packed as [row block][k][R] and B as [panel][k][2V] (zeros past M and
    N) in parallel loops, then an `scf.forall` over (group of column
    panels, row chunk) runs, per block of 256 k's and of 16 row blocks,
    micro-kernels that hold an R x 2V block of C in registers (12 x 32 on
    AVX-512, 6 x 16 on AVX2): one broadcast of A per row and two FMAs per
    k. Columns past N are masked and rows past M skipped, so any M, N, K
    (static or dynamic) is covered. Packed weights may be bf16 or f16,
    widened to f32 by the micro-kernel (body C + A * extf(B)). With
    `amx-bf16` among the module target's features, products
    C + extf(truncf(A)) * extf(B) of bf16 weights packed in k
    pairs (B[n floordiv 16, k floordiv 2, (n mod 16) * 2 + k mod 2]) run
    on AMX tiles (AmxGemm.h). With `avx512bf16` and no AMX (Zen 4 /
    5) the same products with 2V-column panels (B[n floordiv 2V,
    k floordiv 2, (n mod 2V) * 2 + k mod 2]) run on the GEMM above with A
    packed as bf16 pairs and each pair of FMAs one `vdpbf16ps` (twice the
    multiply-adds per instruction). Products of other element types, on
    tensors or with a non-unit inner stride are left for
    convert-linalg-to-loops.
  }];
  let options = [
    Option<"parallelTiles", "parallel-tiles", "int64_t", /*default=*/"16",
           "forall iterations to aim for (2 per thread balances; more "
           "re-read B more often)">,
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect", "::mlir::x86vector::X86VectorDialect",
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def AttnToGpuKernels : Pass<"attn-to-gpu-kernels", "ModuleOp"> {
  let summary = "Lower functions of one tiled attention (or one product) to "
                "GPU kernels";
  let description = [{
    Consumes attn-tile's output for the module's GPU `#attn.target`
    (vulkan without one; docs/Design.md, "The tiled form"; docs/Gpu.md): each function whose body is one tiled attention of
    its arguments becomes a `gpu.func` kernel in the `attn_kernels`
    `gpu.module` (the module becomes a `gpu.container_module`) and the host
    function is erased.

    One workgroup per (query tile, query head, batch row), one invocation
    per query row. Per visited key tile, the workgroup stages K and V rows
    in workgroup memory; each invocation keeps its scaled query row, the
    running max and sum and its accumulator row in registers and runs the
    online softmax over the tile, one exp per score. The key tiles come
    from the compile-time schedule of the plan (uploaded as a buffer), or
    from run-time tile classes; full tiles carry no mask code. Mask
    patterns, segment ids, score mods and score regions use the same
    codegen helpers as the CPU; constant tables become select chains.

    f16 and bf16 attention on CUDA takes the tensor-core kernel instead:
    one warp per 16 query rows, Q K^T and P V of each key tile as
    `nvvm.mma.sync` m16n8k16 (f32 accumulators, f32 softmax), the
    probabilities kept in registers as the A operand of the second product.
    With `emulate-mma` a Vulkan target gets the same kernel with each mma
    done through workgroup memory (a test of its fragment bookkeeping on
    lavapipe, not a fast path).

    On sm_90a (`cuda-sm90a`) both products are warpgroup mma (`wgmma`) on
    operands in 128-byte swizzled workgroup memory, where D and Dv are
    multiples of 64; `emulate-wgmma` gives a Vulkan target that kernel with
    each wgmma done through workgroup memory from its descriptors.

    A function whose body is one `linalg.matmul` of its arguments (a
    layer's product; W [K, N] or [N, K], from a zero fill), optionally
    finished by one element-wise `linalg.generic` epilogue, becomes a tiled
    GEMM kernel instead (GpuLinearKernel.cpp; a skinny form for at most 8
    rows), the epilogue applied to each sum before it is stored. A function
    that returns its one argument through expand_shape, collapse_shape,
    transpose, extract_slice and pad (by a constant) becomes a gather
    kernel (GpuLayoutKernel.cpp: each result element read from where the
    chain takes it), as a layer's split into heads and merge need. A
    function of one element-wise linalg.generic (parallel loops, inputs
    through any affine maps within their bounds, f32) becomes an element
    kernel (GpuElementwiseKernel.cpp): a layer's RoPE. A function of
    linalg.generic ops that reduce rows along their last loop (addf, mulf,
    maximumf, minimumf, maxnumf or minnumf of the accumulator, from a fill
    of a constant) and element-wise generics over the rows or their
    elements, returning an element-wise one, becomes a row kernel
    (GpuRowReductionKernel.cpp: a workgroup per row, each reduction a pass
    over its columns, subgroup shuffles and one barrier, element-wise
    values recomputed where they are read): a layer's LayerNorm or RMSNorm, a
    softmax. A function that returns one tensor.insert_slice of an argument into another, at offsets
    that are constants or i32 elements of an argument read at run time,
    becomes an insertion kernel (GpuInsertKernel.cpp) that updates the
    destination in place (binding access "readwrite", no result binding),
    storing the inserted elements only and dropping those that fall
    outside it: a decoder's keys appended to the KV cache on the device.

    The launch is recorded on each kernel: `attn.grid` (workgroups in x, y,
    z), `attn.bindings` (one dictionary per kernel argument: name, access)
    and `attn.schedule` (the schedule buffer's contents).

    The Vulkan target puts a `spirv.target_env` on the gpu.module and the
    SPIR-V entry point ABI on each kernel, stages tiles in `memref.alloc`
    of address space 3, and guards each `scf.for` with results that may
    run no iteration by an `scf.if` (LLVM 22's scf-to-spirv leaves its
    results undefined then); the CUDA target uses workgroup attributions.
  }];
  let options = [
    Option<"countTiles", "count-tiles", "bool", /*default=*/"false",
           "add a buffer that receives, per workgroup, the number of key "
           "tiles it visited">,
    Option<"maxKeySplits", "max-key-splits", "int64_t", /*default=*/"64",
           "launches with fewer workgroups than the target wants split each "
           "workgroup's key tiles over up to this many workgroups (1: never)">,
    Option<"emulateMma", "emulate-mma", "bool", /*default=*/"false",
           "Vulkan: give f16 / bf16 attention the tensor-core kernel, each "
           "mma carried out through workgroup memory (for testing)">,
    Option<"emulateWgmma", "emulate-wgmma", "bool", /*default=*/"false",
           "Vulkan: give f16 / bf16 attention sm_90a's warpgroup kernel, each "
           "wgmma carried out through workgroup memory (for testing)">,
    Option<"tf32", "tf32", "bool", /*default=*/"false",
           "f32 attention on the tensor-core kernel with TF32 products "
           "(10-bit mantissas: an opt-in, since it changes rounding)">,
    Option<"tf32x3", "tf32x3", "bool", /*default=*/"false",
           "f32 attention on the tensor-core kernel with 3xTF32 products "
           "(high and low TF32 parts, three mma each: about f32's error)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::vector::VectorDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::spirv::SPIRVDialect"
  ];
}

def AttnFourierMixToCall : Pass<"attn-fourier-mix-to-call", "ModuleOp"> {
  let summary = "Lower attn.fourier_mix (FNet) to a call of the runtime's FFT";
  let description = [{
    Each f32 `attn.fourier_mix` becomes a call of `attn_fourier_mix_f32`
    (declared private with `llvm.emit_c_interface`; the attn runtime
    defines it with FFTW's two-dimensional real-to-complex transform) on
    the input's buffer and a fresh 64-byte-aligned output buffer.
    O(L Dm log(L Dm)). Kernels that use it need the attn runtime: attn-run's
    JIT provides it.
  }];
  let dependentDialects = [
    "::mlir::bufferization::BufferizationDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect"
  ];
}

#endif // ATTN_CONVERSION_PASSES_TD
