//===- Passes.td - attn transformation passes --------------*- tablegen -*-===//
#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AttnSetTarget : Pass<"attn-set-target", "ModuleOp"> {
  let summary = "Attach the target description (#attn.target) to the module";
  let description = [{
    The first step of every pipeline: the module gets `attn.target =
    #attn.target<...>`, the one description of its machine every later
    pass reads (TargetDescription.h). With `target` set, its description
    replaces any the module has; empty, a module's own `#attn.target` is
    kept and one without gets cpu-avx2. `workgroup-rows` replaces a GPU
    target's query rows per workgroup (a multiple of 16 up to 256): a
    tuning knob, and how the suite runs sm_90a's two-warpgroup geometry on
    lavapipe.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "cpu-avx2, cpu-avx512, cpu-avx512-bf16, cpu-amx, host, vulkan, "
           "vulkan-lavapipe, vulkan-generic, cuda, cuda-sm80, cuda-sm90, "
           "cuda-sm90a">,
    Option<"workgroupRows", "workgroup-rows", "int64_t", /*default=*/"0",
           "GPU targets: query rows per workgroup (0: the target's)">,
  ];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

def AttnVerifyTarget : Pass<"attn-verify-target", "ModuleOp"> {
  let summary = "Report attn ops the module's target cannot lower yet";
  let description = [{
    Right after attn-set-target in every pipeline: each attn op whose
    inputs have an element type the module's `#attn.target` does not take
    (its `element_types`), or whose results the target's kernels do not
    write, gets an error at its location naming the type and the target,
    rather than one from a lowering deep inside the pipeline. A module
    without a target is checked against cpu-avx2.
  }];
}

def AttnExpandBf16 : Pass<"attn-expand-bf16", "ModuleOp"> {
  let summary = "Expand bf16 conversions where the target has no instruction";
  let description = [{
    When the module's `#attn.target` has neither `avx512bf16` nor
    `avxneconvert`, runs arith-expand{include-bf16}: f32 <-> bf16
    conversions become integer arithmetic (round to nearest even, as the
    instructions do), since LLVM would otherwise call __truncsfbf2, which
    neither the JIT nor artifacts link. Otherwise it changes nothing.
  }];
}

def AttnTile : Pass<"attn-tile", "ModuleOp"> {
  let summary = "Tile attn.attention into the tiled form (online softmax)";
  let description = [{
    Rewrites each `attn.attention` into the tiled form every back end
    consumes (docs/Design.md, "The tiled form"): an `scf.forall` over
    (batch, query head, query tile) whose body starts an online-softmax
    state (-inf, 0, 0), runs one `attn.online_attention` over the key tiles
    and writes `attn.finalize_tile` of its state into the output rows.

    Tile sizes: in a module with an `#attn.target` (and `for-target`), the
    kernel plan of each op for that target (KernelPlan.h) chooses them:
    query tiles of the register blocking, restarting at table blocks; the
    key tile from `kv-tile` (0: chosen per pattern), shrunk to divide table
    blocks. Otherwise `q-tile` x `kv-tile` for every op.

    Every feature of attn.attention is carried over; the element type is
    kept (the state is f32).
  }];
  let options = [
    Option<"queryTile", "q-tile", "int64_t", /*default=*/"64",
           "rows of queries per tile (without a target)">,
    Option<"keyTile", "kv-tile", "int64_t", /*default=*/"128",
           "rows of keys/values per tile (with a target, 0: chosen per "
           "pattern)">,
    Option<"forTarget", "for-target", "bool", /*default=*/"true",
           "plan tiles for the module's #attn.target when it has one "
           "(false: q-tile x kv-tile)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
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

def AttnDecomposeRope : Pass<"attn-decompose-rope"> {
  let summary = "Rewrite attn.rope as one element-wise linalg.generic";
  let description = [{
    Each output element is its input times cos(theta) plus or minus its
    pair partner (read with tensor.extract) times sin(theta), theta =
    position * base^(-2n / D) computed in f64 (docs/Dialect.md).
  }];
  let dependentDialects = DecompositionDialects;
}

def AttnDecomposePagedKv : Pass<"attn-decompose-paged-kv"> {
  let summary = "Rewrite attn.paged_kv as a gather of its rows";
  let description = [{
    Each attn.paged_kv the kernels did not read in place becomes one
    linalg.generic reading the page table and the pool with tensor.extract
    (table entries clamped to the pool); unused ones are erased.
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

def AttnInterchangeReductions : Pass<"attn-interchange-reductions"> {
  let summary = "Put the output's innermost loop innermost in reductions";
  let description = [{
    For each `linalg.generic` on tensors whose innermost loop is a
    reduction while its output's innermost dim is another loop that some
    input is also laid out along (e.g. out[b, h, r] = sum_n phi[b, h, n,
    r]), moves that loop innermost, so the loops convert-linalg-to-loops
    emits read and write contiguously (vectors, not gathers). Generics with
    an input read contiguously along the reduction are left alone.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def AttnParallelizeLinalg : Pass<"attn-parallelize-linalg"> {
  let summary = "Run the leading parallel loops of linalg ops on all cores";
  let description = [{
    Tiles every `linalg.generic` on tensors that is not already inside an
    `scf.forall` by one along its leading parallel loops (until their trip
    counts multiply to at least 8) into an `scf.forall`, which the CPU
    pipeline maps to OpenMP. Meant for the linalg code the decompositions
    leave (batch and head loops first, by EinsumBuilder's loop order).
    With `keep-contractions`, f32 contractions (ContractionMatch.h), 2-D
    products on packed weights (a layer's products, LinearKernels.h) and
    the element-wise epilogues on their results stay whole for
    attn-matmul-to-cpu-gemm.
  }];
  let options = [
    Option<"keepContractions", "keep-contractions", "bool",
           /*default=*/"false",
           "leave C[batch, m, n] += A B generics whole (the CPU GEMM takes "
           "them)">,
  ];
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

#endif // ATTN_TRANSFORMS_PASSES_TD
