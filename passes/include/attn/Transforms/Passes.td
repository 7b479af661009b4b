//===- Passes.td - attn transformation passes --------------*- tablegen -*-===//
#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnVerifyTarget : Pass<"attn-verify-target", "ModuleOp"> {
  let summary = "Report attn ops the chosen target cannot lower yet";
  let description = [{
    The first step of every target's pipeline: each attn op whose inputs
    have an element type the target's lowerings do not take gets an error
    at its location naming the type and the target (the CPU target lowers
    f32 today; f16 and bf16 verify and are refused here rather than by a
    lowering deep inside the pipeline).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "the target the pipeline lowers for (cpu)">,
  ];
}

def AttnTile : Pass<"attn-tile", "ModuleOp"> {
  let summary = "Tile attn.attention into the tiled form (online softmax)";
  let description = [{
    Rewrites each `attn.attention` into the tiled form every back end
    consumes (docs/Design.md, "The tiled form"): an `scf.forall` over
    (batch, query head, query tile) whose body starts an online-softmax
    state (-inf, 0, 0), runs one `attn.online_attention` over the key tiles
    and writes `attn.finalize_tile` of its state into the output rows.

    Tile sizes: with `target` empty, `q-tile` x `kv-tile` for every op.
    With a target (cpu-avx2, cpu-avx512), the kernel plan of each op
    (KernelPlan.h) chooses them: query tiles of the register blocking,
    restarting at table blocks; the key tile from `kv-tile` (0: chosen per
    pattern), shrunk to divide table blocks.

    Every feature of attn.attention is carried over; the element type is
    kept (the state is f32).
  }];
  let options = [
    Option<"queryTile", "q-tile", "int64_t", /*default=*/"64",
           "rows of queries per tile (without a target)">,
    Option<"keyTile", "kv-tile", "int64_t", /*default=*/"128",
           "rows of keys/values per tile (with a target, 0: chosen per "
           "pattern)">,
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "plan tiles for this target (cpu-avx2, cpu-avx512); empty: use "
           "q-tile and kv-tile">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
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

def AttnToCpuKernels : Pass<"attn-to-cpu-kernels", "ModuleOp"> {
  let summary = "Lower the tiled form to vectorized flash kernels for CPUs";
  let description = [{
    Consumes attn-tile's output (docs/Design.md, "The tiled form"): each
    tiled attention it supports, tiled as the CPU plan for `vector-bits`
    asks, becomes an `scf.forall` over (batch, query head, query tile) on
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
    Option<"vectorBits", "vector-bits", "int64_t", /*default=*/"256",
           "vector register width to block for: 256 (AVX2) or 512 (AVX-512)">,
    Option<"countTiles", "count-tiles", "bool", /*default=*/"false",
           "call attn_record_tiles(query tile, key tile, visited, partial) "
           "once per query tile (for attn-run --stats)">,
    Option<"reportTiles", "report-tiles", "bool", /*default=*/"false",
           "emit a remark per op with the key tiles its schedule visits">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect"
  ];
}

def AttnApproximateMath : Pass<"attn-approximate-math"> {
  let summary = "Replace math.exp by a vectorizable polynomial approximation";
  let description = [{
    math.exp on vectors otherwise lowers to one libm call per lane; MLIR's
    polynomial approximation (relative error about 1e-7 in f32) keeps it in
    vector registers.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def AttnDecomposeAggregatedOps : Pass<"attn-decompose-aggregated-ops"> {
  let summary = "Replace linalg.softmax (and other aggregated named ops) by "
                "the linalg ops they decompose into";
  let description = [{
    Upstream gives `linalg.softmax` no loop lowering: it decomposes (through
    `AggregatedOpInterface::decomposeOperation`) into a max reduction,
    `exp(x - max)`, a sum reduction and a division as `linalg.generic`s.
    This pass applies that decomposition to every such op, so IR that
    attn-raise left alone (a softmax that is not part of attention, over
    another dimension, ...) still compiles. attn-cpu-pipeline runs it
    after the attention lowering.
  }];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect"
  ];
}

def AttnInlineAllocaScopes : Pass<"attn-inline-alloca-scopes"> {
  let summary = "Inline memref.alloca_scope ops that hold no stack allocation";
  let description = [{
    convert-scf-to-openmp wraps each parallel loop body in a
    memref.alloca_scope, which convert-scf-to-cf rejects once the body holds
    loops. Upstream canonicalization keeps a scope when the body calls a
    function (the call might allocate on the stack), but a callee's allocas
    are released when it returns. This pass inlines every scope whose region
    contains no memref.alloca (or other automatic allocation) outside nested
    allocation scopes.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

//===----------------------------------------------------------------------===//
// Decompositions of the efficient-attention ops
//===----------------------------------------------------------------------===//

defvar DecompositionDialects = [
  "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
  "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
  "::mlir::tensor::TensorDialect"
];

def AttnDecomposeLinformer : Pass<"attn-decompose-linformer"> {
  let summary = "Rewrite attn.linformer as sequence projections + attention";
  let description = [{
    K' = E K and V' = F V become linalg.generic contractions along the
    sequence (shared or per-head E, F); the softmax over the k projected
    keys becomes an `attn.attention`, which the attention kernels lower.
    Cost O(Lk k D + Lq k D).
  }];
  let dependentDialects = DecompositionDialects;
}

def AttnDecomposeNystrom : Pass<"attn-decompose-nystrom"> {
  let summary = "Rewrite attn.nystrom as landmarks, pseudo-inverse, attention";
  let description = [{
    Segment means (averaging matrices built from indices), the small m x m
    softmax kernel and its iterative pseudo-inverse (an scf.for of
    `pinv_iterations` steps) as linalg.generic ops, and the two L-sized
    softmax kernels as `attn.attention` ops: Bm V = attention(Q~, K, V) and
    O = attention(Q, K~, pinv(A) Bm V). Static shapes, f32.
  }];
  let dependentDialects = DecompositionDialects;
}

def AttnDecomposeKernelized : Pass<"attn-decompose-kernelized"> {
  let summary = "Rewrite attn.kernelized as linear-time feature-map products";
  let description = [{
    Feature maps (FAVOR+ with max-stabilisation, RFA, elu+1, ReLU) as
    linalg.generic ops; non-causal attention as phi(Q) (phi(K)^T V) /
    (phi(Q) sum phi(K)); causal attention by chunks of 64 rows (an scf.for
    carrying the prefix state, quadratic within a chunk). Static shapes,
    f32.
  }];
  let dependentDialects = DecompositionDialects;
}

def AttnDecomposeLsh : Pass<"attn-decompose-lsh"> {
  let summary = "Rewrite attn.lsh (Reformer) as hashing, sort, chunked attention";
  let description = [{
    Random-rotation hashing (argmax over [xR, -xR]) as linalg.generic ops,
    the stable sort by bucket as a call of the runtime's `attn_counting_sort`
    (counting sort), then every round at once: gathers of the sorted
    queries and of the keys/values of each chunk and its predecessor, the
    masked scores (same bucket, not self, causal), a softmax with its
    log-sum-exp, gathers back to sequence order and the combination of the
    rounds by their log-sum-exps. Static shapes, f32.
  }];
  let dependentDialects = !listconcat(DecompositionDialects, [
    "::mlir::bufferization::BufferizationDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ]);
}

def AttnDecomposeRouting : Pass<"attn-decompose-routing"> {
  let summary = "Rewrite attn.routing as top-k memberships + clustered attention";
  let description = [{
    Scores against the unit-normalised centroids as linalg.generic ops, the
    balanced memberships (top_k queries and top_k keys per centroid) as
    calls of the runtime's `attn_top_k_f32`, gathers of each cluster's
    queries, keys and values, attention per cluster block (non-causal: an
    `attn.attention` with (head, cluster) as heads; causal: a softmax masked
    by the gathered positions, in linalg), and the mean over each query's
    clusters, the
    memberships grouped by query with the runtime's `attn_counting_sort`.
    Static shapes, f32.
  }];
  let dependentDialects = !listconcat(DecompositionDialects, [
    "::mlir::bufferization::BufferizationDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ]);
}

def AttnParallelizeLinalg : Pass<"attn-parallelize-linalg"> {
  let summary = "Run the leading parallel loops of linalg ops on all cores";
  let description = [{
    Tiles every `linalg.generic` on tensors that is not already inside an
    `scf.forall` by one along its leading parallel loops (until their trip
    counts multiply to at least 8) into an `scf.forall`, which the CPU
    pipeline maps to OpenMP. Meant for the linalg code the decompositions
    leave (batch and head loops first, by EinsumBuilder's loop order).
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
    "::mlir::affine::AffineDialect", "::mlir::arith::ArithDialect"
  ];
}

def AttnRaise : Pass<"attn-raise"> {
  let summary = "Raise attention written in linalg to attn.attention";
  let description = [{
    Finds `contract(softmax(steps(contract(Q, K))), V)` as front ends emit
    it on tensors: `linalg.matmul` / `batch_matmul` / contraction
    `linalg.generic`s (K transposed by indexing maps or `linalg.transpose`,
    K / V heads repeated by `repeat_interleave` for GQA), scale steps
    (multiply or divide by a positive constant), additive terms and
    `select(c, s, -inf)` / `select(c, -inf, s)` steps, and `linalg.softmax`
    or its max / exp(x - max) / sum / div decomposition over the last
    dimension. Masks are evaluated symbolically per score element: keeping
    j <= i (iota comparisons, a constant lower triangle) becomes
    `pattern(#attn.causal)`, an i1 tensor the `mask` operand, an additive
    0 nothing; any other additive term is the `bias`. Each match becomes
    one `attn.attention`, operands reshaped to [B, H, L, D]. f32;
    intermediate values must have no other users. IR that does not match
    is left as it was.
  }];
  let dependentDialects = [
    "::mlir::attn::AttnDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::tensor::TensorDialect"
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

#endif // ATTN_TRANSFORMS_PASSES_TD
