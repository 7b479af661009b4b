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

#endif // ATTN_DIALECT_ATTN_IR_ATTNATTRS_TD
