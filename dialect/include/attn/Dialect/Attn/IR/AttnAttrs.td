//===- AttnAttrs.td - mask patterns and score mods ---------*- tablegen -*-===//
#ifndef ATTN_DIALECT_ATTN_IR_ATTNATTRS_TD
#define ATTN_DIALECT_ATTN_IR_ATTNATTRS_TD

include "attn/Dialect/Attn/IR/AttnBase.td"
include "attn/Dialect/Attn/IR/AttnInterfaces.td"
include "mlir/IR/AttrTypeBase.td"

class Attn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Attn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class Attn_MaskAttr<string name, string attrMnemonic,
                    list<string> overrides = []>
    : Attn_Attr<name, attrMnemonic,
                [DeclareAttrInterfaceMethods<Attn_MaskAttrInterface,
                                             overrides>]>;

class Attn_ScoreModAttr<string name, string attrMnemonic,
                        list<string> overrides = []>
    : Attn_Attr<name, attrMnemonic,
                [DeclareAttrInterfaceMethods<Attn_ScoreModAttrInterface,
                                             overrides>]>;

//===----------------------------------------------------------------------===//
// Mask patterns. Below, p = i + delta is the key-space position of query i
// (delta from the op's alignment) and r = j - p its signed distance.
//===----------------------------------------------------------------------===//

def Attn_CausalAttr : Attn_MaskAttr<"Causal", "causal"> {
  let summary = "causal mask: keeps r <= 0";
  let description = [{
    Example: `#attn.causal`. Keeps key j for query i when j <= i + delta.
  }];
}

def Attn_WindowAttr : Attn_MaskAttr<"Window", "window"> {
  let summary = "sliding window: keeps -left <= r <= right";
  let description = [{
    Example: `#attn.window<left = 256, right = 256>` (Longformer local
    attention); `#attn.window<left = 127, right = 0>` is a causal window.
  }];
  let parameters = (ins "int64_t":$left, "int64_t":$right);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_DilatedAttr : Attn_MaskAttr<"Dilated", "dilated"> {
  let summary = "dilated window: keeps -left <= r <= right, r % dilation == 0";
  let description = [{
    Example: `#attn.dilated<left = 512, right = 512, dilation = 2>`
    (Longformer dilated sliding window).
  }];
  let parameters = (ins "int64_t":$left, "int64_t":$right,
                        "int64_t":$dilation);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_StridedAttr : Attn_MaskAttr<"Strided", "strided"> {
  let summary = "strided pattern: keeps r % stride == 0";
  let description = [{
    Example: `#attn.strided<stride = 64>`. The Sparse Transformer's strided
    pattern is `#attn.and<[#attn.causal, #attn.or<[#attn.window<left = 63,
    right = 0>, #attn.strided<stride = 64>]>]>`.
  }];
  let parameters = (ins "int64_t":$stride);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_FixedAttr : Attn_MaskAttr<"Fixed", "fixed"> {
  let summary = "Sparse Transformer fixed pattern";
  let description = [{
    Example: `#attn.fixed<stride = 128, summary = 8>`. Keeps key j when it is
    in the same block of `stride` positions as p (floor(j / stride) ==
    floor(p / stride)) or when it is one of the last `summary` positions of
    its block (j mod stride >= stride - summary).
  }];
  let parameters = (ins "int64_t":$stride, "int64_t":$summary);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_GlobalAttr : Attn_MaskAttr<"Global", "global", ["verifyShape"]> {
  let summary = "global tokens (Longformer / ETC)";
  let description = [{
    Example: `#attn.global<[0, 1]>`. Listed key-space positions attend to all
    keys and are attended by all queries: keeps (i, j) when p or j is listed.
    Indices are sorted and unique.
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$indices);
  let assemblyFormat = "`<` `[` $indices `]` `>`";
  let genVerifyDecl = 1;
}

def Attn_RandomBlocksAttr : Attn_MaskAttr<"RandomBlocks", "random_blocks"> {
  let summary = "BigBird random blocks, reproducible from a seed";
  let description = [{
    Example: `#attn.random_blocks<block = 64, count = 3, seed = 42>`. The
    Lq x Lk matrix is cut into `block` x `block` blocks; query block qb of
    head h keeps min(count, ceil(Lk / block)) distinct key blocks drawn by the
    splitmix64 partial Fisher-Yates shuffle documented in `docs/Dialect.md`.
  }];
  let parameters = (ins "int64_t":$block, "int64_t":$count, "int64_t":$seed);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_BlockLayoutAttr
    : Attn_MaskAttr<"BlockLayout", "block_layout", ["verifyShape"]> {
  let summary = "explicit block-sparse layout (DeepSpeed / xFormers style)";
  let description = [{
    Example: `#attn.block_layout<block = 64, layout = dense<[[[1, 0], [1, 1]]]>
    : tensor<1x2x2xi1>>`. `layout` is `[1 or Hq, ceil(Lq / block),
    ceil(Lk / block)]`; block (qb, kb) of head h is kept when its entry is
    non-zero.
  }];
  let parameters = (ins "int64_t":$block, "DenseIntElementsAttr":$layout);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Layout entry for (head, query block, key block); out of range is 0.
    bool isBlockKept(int64_t head, int64_t qb, int64_t kb) const;
  }];
}

def Attn_SegmentsAttr : Attn_MaskAttr<"Segments", "segments", ["usesSegments"]> {
  let summary = "document / segment masking from run-time ids";
  let description = [{
    Example: `#attn.segments`. Keeps (i, j) when q_segments[b, i] ==
    kv_segments[b, j]; the ids are the op's `segments(...)` operands.
  }];
}

def Attn_OrAttr
    : Attn_MaskAttr<"Or", "or", ["verifyShape", "usesSegments"]> {
  let summary = "union of patterns";
  let description = [{
    Example (Longformer): `#attn.or<[#attn.window<left = 256, right = 256>,
    #attn.global<[0]>]>`.
  }];
  let parameters = (ins "ArrayAttr":$members);
  let assemblyFormat = "`<` $members `>`";
  let genVerifyDecl = 1;
}

def Attn_AndAttr
    : Attn_MaskAttr<"And", "and", ["verifyShape", "usesSegments"]> {
  let summary = "intersection of patterns";
  let description = [{
    Example: `#attn.and<[#attn.causal, #attn.window<left = 127, right = 0>]>`.
  }];
  let parameters = (ins "ArrayAttr":$members);
  let assemblyFormat = "`<` $members `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Score mods, applied in list order to x = scale * q.k + bias.
//===----------------------------------------------------------------------===//

def Attn_AlibiAttr : Attn_ScoreModAttr<"Alibi", "alibi"> {
  let summary = "ALiBi linear distance penalty with geometric head slopes";
  let description = [{
    Example: `#attn.alibi<max_bias = 8.0>`. x += -m_h * |r|, with the
    geometric slopes m_h of Press et al. (see `docs/Dialect.md`).
  }];
  let parameters = (ins APFloatParameter<"">:$max_bias);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_SoftcapAttr : Attn_ScoreModAttr<"Softcap", "softcap"> {
  let summary = "tanh soft-capping: x = cap * tanh(x / cap)";
  let description = [{ Example: `#attn.softcap<cap = 50.0>`. }];
  let parameters = (ins APFloatParameter<"">:$cap);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_ShawBiasAttr
    : Attn_ScoreModAttr<"ShawBias", "shaw_bias", ["getTableColumns"]> {
  let summary = "Shaw relative-position bias with clipped distance";
  let description = [{
    Example: `#attn.shaw_bias<max_distance = 16>`. x += table[h, clip(r, -k,
    k) + k] with k = max_distance; the table operand is `[Hq, 2k + 1]`.
  }];
  let parameters = (ins "int64_t":$max_distance);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_T5BiasAttr
    : Attn_ScoreModAttr<"T5Bias", "t5_bias", ["getTableColumns"]> {
  let summary = "T5 bucketed relative-position bias";
  let description = [{
    Example: `#attn.t5_bias<buckets = 32, max_distance = 128, bidirectional =
    true>`. x += table[h, bucket(r)], table `[Hq, buckets]`, with T5's
    log-spaced bucket function (see `docs/Dialect.md`).
  }];
  let parameters = (ins "int64_t":$buckets, "int64_t":$max_distance,
                        "bool":$bidirectional);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Attn_DistanceWeightAttr
    : Attn_ScoreModAttr<"DistanceWeight", "distance_weight", ["verifyHeads"]> {
  let summary = "DA-Transformer distance re-weighting";
  let description = [{
    Example: `#attn.distance_weight<weights = [1.0, 0.5], threshold = 1.0>`.
    With R = w_h * |r| and v = threshold:
    x = relu(x) * (1 + exp(v)) / (1 + exp(v - R)). `weights` has 1 or Hq
    entries.
  }];
  let parameters = (ins ArrayRefParameter<"::llvm::APFloat">:$weights,
                        APFloatParameter<"">:$threshold);
  let assemblyFormat = "`<` `weights` `=` `[` $weights `]` `,` `threshold` `=` $threshold `>`";
  let genVerifyDecl = 1;
}

def Attn_AdaptiveSpanAttr
    : Attn_ScoreModAttr<"AdaptiveSpan", "adaptive_span", ["verifyHeads"]> {
  let summary = "adaptive-span soft mask (Sukhbaatar et al.)";
  let description = [{
    Example: `#attn.adaptive_span<spans = [64.0, 128.0], ramp = 32.0>`.
    x += log(clamp((ramp + z_h - |r|) / ramp, 0, 1)); a zero weight removes
    the key from S. `spans` has 1 or Hq entries.
  }];
  let parameters = (ins ArrayRefParameter<"::llvm::APFloat">:$spans,
                        APFloatParameter<"">:$ramp);
  let assemblyFormat = "`<` `spans` `=` `[` $spans `]` `,` `ramp` `=` $ramp `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Targets.
//===----------------------------------------------------------------------===//

/// A list of integers written in brackets, `[16, 8, 16]`, empty when absent.
def Attn_IntListParameter : OptionalArrayRefParameter<"int64_t"> {
  let printer = [{
    $_printer << '[';
    ::llvm::interleaveComma($_self, $_printer);
    $_printer << ']';
  }];
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::SmallVector<int64_t>> {
    ::llvm::SmallVector<int64_t> values;
    if ($_parser.parseCommaSeparatedList(
            ::mlir::AsmParser::Delimiter::Square,
            [&] { return $_parser.parseInteger(values.emplace_back()); }))
      return ::mlir::failure();
    return values;
  }() }];
}

def Attn_TargetAttr : Attn_Attr<"Target", "target"> {
  let summary = "the machine a module is lowered for";
  let description = [{
    Every fact a lowering may assume about its machine, attached to the
    module as `attn.target` by `attn-set-target` (the first step of each
    pipeline) and read by every pass that needs one (docs/Design.md,
    "Targets"). Built by `TargetDescription` from a name (`cpu-avx2`,
    `cpu-avx512`, `cpu-avx512-bf16`, `cpu-amx`, `vulkan`, `cuda-sm90`, ...)
    or from a CPU's feature list; parameters equal to their defaults are not
    printed.

    CPU (`api = "cpu"`): `vector_bits` (256 or 512) and `vector_registers`
    fix the kernels' register blockings; `l1_bytes` / `l2_bytes` the caches
    tiles stay inside; `features` the ISA extensions the code may use:
    `avx512bf16` (vdpbf16ps products and native bf16 conversions),
    `amx-bf16` (AMX tile products), `avxneconvert`.

    GPU (`api = "vulkan"` or `"cuda"`): `chip` (sm_XX), `subgroup_size`,
    `workgroup_memory` (bytes), `workgroup_rows` (invocations of a
    workgroup), `max_key_tile`, `min_workgroups` (launches with fewer split
    their keys), `pipeline_depth` (stages of K / V tiles) and `mma` (the
    M, N, K shapes of its matrix units, flattened).

    `element_types`: the types of Q, K and V the lowerings take.

    Example: `#attn.target<name = "cpu-avx512-bf16", vector_bits = 512,
    vector_registers = 32, l1_bytes = 49152, l2_bytes = 2097152,
    features = ["avx512bf16"], element_types = [f32, f16, bf16]>`.
  }];
  let parameters = (ins
      StringRefParameter<"target name">:$name,
      StringRefParameter<"api", "\"cpu\"">:$api,
      DefaultValuedParameter<"int64_t", "256">:$vector_bits,
      DefaultValuedParameter<"int64_t", "16">:$vector_registers,
      DefaultValuedParameter<"int64_t", "32768">:$l1_bytes,
      DefaultValuedParameter<"int64_t", "1048576">:$l2_bytes,
      OptionalParameter<"ArrayAttr">:$features,
      StringRefParameter<"chip", "\"\"">:$chip,
      DefaultValuedParameter<"int64_t", "0">:$subgroup_size,
      DefaultValuedParameter<"int64_t", "0">:$workgroup_memory,
      DefaultValuedParameter<"int64_t", "0">:$workgroup_rows,
      DefaultValuedParameter<"int64_t", "0">:$max_key_tile,
      DefaultValuedParameter<"int64_t", "0">:$min_workgroups,
      DefaultValuedParameter<"int64_t", "1">:$pipeline_depth,
      Attn_IntListParameter:$mma,
      OptionalParameter<"ArrayAttr">:$element_types);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The name of the module attribute that holds a module's target.
    static constexpr ::llvm::StringLiteral getAttrName() {
      return ::llvm::StringLiteral("attn.target");
    }
  }];
}

#endif // ATTN_DIALECT_ATTN_IR_ATTNATTRS_TD
