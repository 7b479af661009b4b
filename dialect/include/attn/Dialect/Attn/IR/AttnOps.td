//===- AttnOps.td - attn operations ------------------------*- tablegen -*-===//
#ifndef ATTN_DIALECT_ATTN_IR_ATTNOPS_TD
#define ATTN_DIALECT_ATTN_IR_ATTNOPS_TD

include "attn/Dialect/Attn/IR/AttnAttrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Attn_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Attn_IntTensor : RankedTensorOf<[AnySignlessInteger]>;
def Attn_BoolTensor : RankedTensorOf<[I1]>;
def Attn_F32Tensor : RankedTensorOf<[F32]>;

//===----------------------------------------------------------------------===//
// Softmax family
//===----------------------------------------------------------------------===//

def Attn_AttentionOp : Attn_Op<"attention", [
    AttrSizedOperandSegments, RecursiveMemoryEffects]> {
  let summary = "softmax attention with a mask pattern and score mods";
  let description = [{
    O[b,h,i,:] = sum_{j in S(b,h,i)} softmax_j(x[b,h,i,j]) * V[b,h',j,:]

    with h' = h / (Hq / Hkv) and, in this order,
      x = scale * Q[b,h,i,:] . K[b,h',j,:]   (scale defaults to 1/sqrt(D))
      x += bias[b,h,i,j]                      (optional dense operand)
      x = mod(x) for each mod in `mods`       (in list order)
      x = score(x, b, h, i, j)                (optional region)
    and S(b,h,i) the keys j kept by the `pattern`, by the dense `mask`
    operand (i1, broadcast over size-1 batch/head dims) and with x != -inf.
    A row whose S is empty yields 0, never NaN. Softmax is computed at least
    in f32 whatever the element type.

    Positional patterns and mods place query i at key position
    p = i + delta, delta = 0 for `align = top_left` (default) and Lk - Lq for
    `align = bottom_right` (decoding against a cache).

    `query_offset = a key_offset = c` make the op one block of a larger
    attention: query row i and key row j sit at positions a + i and c + j,
    so delta = a - c (top_left only). Only patterns and mods that depend on
    j - p are allowed with offsets (causal, window, dilated, strided,
    segments, their or/and; every mod), and no score region.

    The optional second result `lse` [B, Hq, Lq] (f32) is the log-sum-exp of
    each row's kept scores, log sum_{j in S} exp(x[b,h,i,j]), -inf for a row
    that keeps nothing: attention over disjoint key sets merges exactly from
    (output, lse) pairs (docs/Distributed.md).

    Example (Longformer with ALiBi, bottom-right causal decoding):

    ```mlir
    %o = attn.attention %q, %k, %v
           pattern(#attn.and<[#attn.causal,
                                #attn.window<left = 255, right = 0>]>)
           align = bottom_right mods = [#attn.alibi<max_bias = 8.0>]
         : (tensor<1x8x16x64xf32>, tensor<1x2x512x64xf32>,
            tensor<1x2x512x64xf32>) -> tensor<1x8x16x64xf32>
    ```

    A custom score function is a region taking (x: f32, b, h, i, j: index):

    ```mlir
    %o = attn.attention %q, %k, %v score {
      ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.constant 0.5 : f32
        %y = arith.mulf %x, %c : f32
        attn.yield %y : f32
    } : (tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>, tensor<1x1x8x16xf32>)
      -> tensor<1x1x8x16xf32>
    ```
  }];
  let arguments = (ins
    Attn_FloatTensor:$query, Attn_FloatTensor:$key, Attn_FloatTensor:$value,
    Optional<Attn_BoolTensor>:$mask,
    Optional<Attn_FloatTensor>:$bias,
    Optional<Attn_IntTensor>:$q_segments,
    Optional<Attn_IntTensor>:$kv_segments,
    Optional<Attn_FloatTensor>:$rel_table,
    OptionalAttr<Attn_MaskAttrInterface>:$pattern,
    OptionalAttr<F32Attr>:$scale,
    OptionalAttr<Attn_AlignmentAttr>:$align,
    OptionalAttr<ArrayAttr>:$mods,
    OptionalAttr<I64Attr>:$query_offset,
    OptionalAttr<I64Attr>:$key_offset);
  let results = (outs Attn_FloatTensor:$output, Optional<Attn_F32Tensor>:$lse);
  let regions = (region MaxSizedRegion<1>:$score);
  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`mask` `(` $mask^ `)`)?
    (`bias` `(` $bias^ `)`)?
    (`segments` `(` $q_segments^ `,` $kv_segments `)`)?
    (`rel_table` `(` $rel_table^ `)`)?
    (`pattern` `(` custom<MaskPattern>($pattern)^ `)`)?
    (`scale` `=` $scale^)?
    (`align` `=` custom<AlignmentKeyword>($align)^)?
    (`query_offset` `=` $query_offset^)?
    (`key_offset` `=` $key_offset^)?
    (`mods` `=` $mods^)?
    (`score` $score^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let hasCanonicalizer = 1;
  let extraClassDeclaration = [{
    /// The alignment, top_left when the attribute is absent.
    Alignment getAlignment() {
      return getAlign() ? *getAlign() : Alignment::top_left;
    }
    /// query_offset - key_offset: added to the alignment's delta.
    int64_t getPositionShift() {
      return (getQueryOffsetAttr() ? getQueryOffsetAttr().getInt() : 0) -
             (getKeyOffsetAttr() ? getKeyOffsetAttr().getInt() : 0);
    }
    /// Static shape facts the mask pattern is checked and simplified with.
    MaskShape getMaskShape();
  }];
}

def Attn_AttentionGradOp : Attn_Op<"attention_grad", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    AllTypesMatch<["query", "query_grad"]>, AllTypesMatch<["key", "key_grad"]>,
    AllTypesMatch<["value", "value_grad"]>,
    AllTypesMatch<["output", "output_grad"]>]> {
  let summary = "the backward of attn.attention: dQ, dK and dV";
  let description = [{
    Given an attn.attention's operands, its `output` O and `lse` results and
    the gradient `output_grad` dO of a loss with respect to O, returns the
    loss's gradients with respect to Q, K and V (docs/Dialect.md,
    "Backward"). Every operand, attribute and region means what it means on
    attn.attention; with x the final logit and P = exp(x - lse) the kept
    probabilities (0 for dropped keys):

      dV[j] = sum_i P[i,j] dO[i]
      dX[i,j] = P[i,j] (dO[i] . V[j] - dO[i] . O[i])
      dS[i,j] = scale * dX[i,j] * (1 - tanh^2(s/c))   (soft-cap c, if any)
      dQ[i] = sum_j dS[i,j] K[j];  dK[j] = sum_i dS[i,j] Q[i]

    with dK and dV summed over the query heads of each key/value head
    (GQA/MQA). Bias and the additive mods pass dX through unchanged; a
    lowering refuses, at the op's location, what it cannot differentiate.
    With `operand_grads` (none, or one per operand present, in this order,
    then one per float tensor the score region captures, in order of first
    use) the op also returns the gradients of the `bias` operand (dX summed
    over the dimensions it broadcasts), of the `rel_table` operand (dX
    summed over the (b, i, j) whose logit reads each entry) and of the
    captured tensors (each element's dX times the region's derivative with
    respect to that read, summed over the logits reading it), in their
    types. A score region passes dX times its derivative with respect to
    its input on to the steps before it.

    ```mlir
    %dq, %dk, %dv = attn.attention_grad %q, %k, %v, %o, %do, %lse
        pattern(#attn.causal)
      : (tensor<1x8x128x64xf32>, tensor<1x2x128x64xf32>,
         tensor<1x2x128x64xf32>, tensor<1x8x128x64xf32>,
         tensor<1x8x128x64xf32>, tensor<1x8x128xf32>)
      -> (tensor<1x8x128x64xf32>, tensor<1x2x128x64xf32>,
          tensor<1x2x128x64xf32>)
    ```
  }];
  let arguments = (ins
    Attn_FloatTensor:$query, Attn_FloatTensor:$key, Attn_FloatTensor:$value,
    Attn_FloatTensor:$output, Attn_FloatTensor:$output_grad,
    Attn_F32Tensor:$lse,
    Optional<Attn_BoolTensor>:$mask,
    Optional<Attn_FloatTensor>:$bias,
    Optional<Attn_IntTensor>:$q_segments,
    Optional<Attn_IntTensor>:$kv_segments,
    Optional<Attn_FloatTensor>:$rel_table,
    OptionalAttr<Attn_MaskAttrInterface>:$pattern,
    OptionalAttr<F32Attr>:$scale,
    OptionalAttr<Attn_AlignmentAttr>:$align,
    OptionalAttr<ArrayAttr>:$mods,
    OptionalAttr<I64Attr>:$query_offset,
    OptionalAttr<I64Attr>:$key_offset);
  let results = (outs Attn_FloatTensor:$query_grad,
                      Attn_FloatTensor:$key_grad,
                      Attn_FloatTensor:$value_grad,
                      Variadic<Attn_FloatTensor>:$operand_grads);
  let regions = (region MaxSizedRegion<1>:$score);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $output `,` $output_grad `,` $lse
    (`mask` `(` $mask^ `)`)?
    (`bias` `(` $bias^ `)`)?
    (`segments` `(` $q_segments^ `,` $kv_segments `)`)?
    (`rel_table` `(` $rel_table^ `)`)?
    (`pattern` `(` custom<MaskPattern>($pattern)^ `)`)?
    (`scale` `=` $scale^)?
    (`align` `=` custom<AlignmentKeyword>($align)^)?
    (`query_offset` `=` $query_offset^)?
    (`key_offset` `=` $key_offset^)?
    (`mods` `=` $mods^)?
    (`score` $score^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    Alignment getAlignment() {
      return getAlign() ? *getAlign() : Alignment::top_left;
    }
    /// The float tensors defined outside the score region that it reads,
    /// in order of first use (their gradients follow the operands').
    SmallVector<Value> getCapturedTensors();
    /// bias, rel_table (when given), then getCapturedTensors(): the values
    /// operand_grads, when present, are the gradients of.
    SmallVector<Value> getDifferentiableOperands();
    int64_t getPositionShift() {
      return (getQueryOffsetAttr() ? getQueryOffsetAttr().getInt() : 0) -
             (getKeyOffsetAttr() ? getKeyOffsetAttr().getInt() : 0);
    }
    MaskShape getMaskShape();
  }];
}

//===----------------------------------------------------------------------===//
// The tiled form (docs/Design.md, "The tiled form")
//===----------------------------------------------------------------------===//


def Attn_OnlineAttentionOp : Attn_Op<"online_attention", [
    AttrSizedOperandSegments, RecursiveMemoryEffects,
    AllTypesMatch<["max", "new_max"]>, AllTypesMatch<["sum", "new_sum"]>,
    AllTypesMatch<["acc", "new_acc"]>]> {
  let summary = "one query tile of attn.attention as an online-softmax update";
  let description = [{
    The unit of work every back end lowers: the rows of query tile `t` of
    batch row `b` and query head `h`, against the key tiles the pattern
    keeps. The query rows are [first, end) = `QueryTiling{query_tile,
    query_period}.rows(t, Lq)` (TileSchedule.h): tiles of `query_tile` rows
    restarting at every multiple of `query_period` (0: never). Keys are cut
    into tiles of `key_tile` rows. For each key tile [j0, j1) that the
    pattern does not drop entirely (tile classes from the mask algebra:
    empty tiles are skipped, full tiles need no mask, partial tiles do):

      x = the score of attn.attention, steps 1-7 of docs/Dialect.md
          (scale, soft-cap, bias, mods, score region, pattern and mask)
      m' = max(m, rowmax x); alpha = exp(m - m'); p = exp(x - m')
      l' = alpha l + rowsum p; acc' = alpha acc + p V[j0:j1]

    where a running max of -inf is subtracted as 0 and a dropped key (p = 0)
    adds nothing to acc even where V is NaN or inf. The state (m, l, acc)
    is f32 whatever the element type of Q, K and V; its rows are the tile's
    end - first rows (`state(%m, %l, %acc)` in, updated state out). The
    operands, attributes and region mean what they mean on attn.attention,
    of which this is one tile; `attn.finalize_tile` turns the final state
    into output rows.
  }];
  let arguments = (ins
    Attn_FloatTensor:$query, Attn_FloatTensor:$key, Attn_FloatTensor:$value,
    Optional<Attn_BoolTensor>:$mask,
    Optional<Attn_FloatTensor>:$bias,
    Optional<Attn_IntTensor>:$q_segments,
    Optional<Attn_IntTensor>:$kv_segments,
    Optional<Attn_FloatTensor>:$rel_table,
    Index:$batch_index, Index:$head_index, Index:$tile_index,
    Attn_F32Tensor:$max, Attn_F32Tensor:$sum, Attn_F32Tensor:$acc,
    I64Attr:$query_tile,
    DefaultValuedAttr<I64Attr, "0">:$query_period,
    I64Attr:$key_tile,
    OptionalAttr<Attn_MaskAttrInterface>:$pattern,
    OptionalAttr<F32Attr>:$scale,
    OptionalAttr<Attn_AlignmentAttr>:$align,
    OptionalAttr<ArrayAttr>:$mods,
    OptionalAttr<I64Attr>:$query_offset,
    OptionalAttr<I64Attr>:$key_offset);
  let results = (outs Attn_F32Tensor:$new_max, Attn_F32Tensor:$new_sum,
                      Attn_F32Tensor:$new_acc);
  let regions = (region MaxSizedRegion<1>:$score);
  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`mask` `(` $mask^ `:` type($mask) `)`)?
    (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`segments` `(` $q_segments^ `,` $kv_segments `:` type($q_segments) `,`
                    type($kv_segments) `)`)?
    (`rel_table` `(` $rel_table^ `:` type($rel_table) `)`)?
    `tile` `(` $batch_index `,` $head_index `,` $tile_index `)`
    `state` `(` $max `,` $sum `,` $acc `:` type($max) `,` type($sum) `,`
                type($acc) `)`
    `query_tile` `=` $query_tile
    (`period` `=` $query_period^)?
    `key_tile` `=` $key_tile
    (`pattern` `(` custom<MaskPattern>($pattern)^ `)`)?
    (`scale` `=` $scale^)?
    (`align` `=` custom<AlignmentKeyword>($align)^)?
    (`query_offset` `=` $query_offset^)?
    (`key_offset` `=` $key_offset^)?
    (`mods` `=` $mods^)?
    (`score` $score^)?
    attr-dict `:` type($query) `,` type($key) `,` type($value)
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    Alignment getAlignment() {
      return getAlign() ? *getAlign() : Alignment::top_left;
    }
    int64_t getPositionShift() {
      return (getQueryOffsetAttr() ? getQueryOffsetAttr().getInt() : 0) -
             (getKeyOffsetAttr() ? getKeyOffsetAttr().getInt() : 0);
    }
    MaskShape getMaskShape();
  }];
}

def Attn_TileLseOp : Attn_Op<"tile_lse", [
    Pure, AllTypesMatch<["max", "sum", "lse"]>]> {
  let summary = "log-sum-exp of an online-softmax state: m + log l";
  let description = [{
    lse[i] = l[i] == 0 ? -inf : m[i] + log(l[i]): the log-sum-exp of the
    scores a tile's rows kept, for the `lse` result of attn.attention.
  }];
  let arguments = (ins Attn_F32Tensor:$max, Attn_F32Tensor:$sum);
  let results = (outs Attn_F32Tensor:$lse);
  let assemblyFormat = [{
    $max `,` $sum attr-dict `:` type($lse)
  }];
}

def Attn_FinalizeTileOp : Attn_Op<"finalize_tile", [Pure]> {
  let summary = "output rows of an online-softmax state: acc / l, 0 if l = 0";
  let description = [{
    O[i, c] = l[i] == 0 ? 0 : acc[i, c] / l[i], converted to the element
    type of the result (that of attn.attention's output). A row that kept
    no key (l = 0) is 0, never NaN.
  }];
  let arguments = (ins Attn_F32Tensor:$acc, Attn_F32Tensor:$sum);
  let results = (outs Attn_FloatTensor:$output);
  let assemblyFormat = [{
    $acc `,` $sum attr-dict `:` type($acc) `,` type($sum) `->` type($output)
  }];
  let hasVerifier = 1;
}

def Attn_YieldOp : Attn_Op<"yield", [
    Pure, Terminator, ReturnLike,
    ParentOneOf<["AttentionOp", "AttentionGradOp", "OnlineAttentionOp"]>]> {
  let summary = "yields the modified score from a score region";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// Low rank
//===----------------------------------------------------------------------===//

def Attn_LinformerOp : Attn_Op<"linformer", [Pure]> {
  let summary = "Linformer: attention over projected keys and values";
  let description = [{
    K' = E . K and V' = F . V along the sequence axis (E, F are `[k, Lk]`,
    shared by all heads, or `[Hkv, k, Lk]`, one per key/value head), then
    O = softmax(scale * Q K'^T) V' (no mask). Cost O(Lq * k).

    ```mlir
    %o = attn.linformer %q, %k, %v proj(%e, %f)
         : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>,
            tensor<1x4x128x64xf32>, tensor<32x128xf32>, tensor<32x128xf32>)
         -> tensor<1x4x128x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value, Attn_FloatTensor:$e_proj,
                       Attn_FloatTensor:$f_proj, OptionalAttr<F32Attr>:$scale);
  let results = (outs Attn_FloatTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value `proj` `(` $e_proj `,` $f_proj `)`
    (`scale` `=` $scale^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_NystromOp : Attn_Op<"nystrom", [Pure]> {
  let summary = "Nystromformer: landmark approximation of softmax attention";
  let description = [{
    Landmarks are segment means: segment s of m covers rows
    [floor(s L / m), floor((s + 1) L / m)) of Q (giving Q~) and of K (K~).
    With F = softmax(scale Q K~^T), A = softmax(scale Q~ K~^T),
    Bm = softmax(scale Q~ K^T): O = F . pinv(A) . (Bm . V), pinv by the
    iterative Moore-Penrose method (Z0 = A^T / (||A||_1 ||A||_inf),
    Z <- Z/4 (13 I - A Z (15 I - A Z (7 I - A Z)))) run `pinv_iterations`
    times (default 6). Cost O(L m).

    ```mlir
    %o = attn.nystrom %q, %k, %v landmarks = 16
         : (tensor<1x4x100x64xf32>, tensor<1x4x100x64xf32>,
            tensor<1x4x100x64xf32>) -> tensor<1x4x100x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value, I64Attr:$landmarks,
                       DefaultValuedAttr<I64Attr, "6">:$pinv_iterations,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs Attn_FloatTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value `landmarks` `=` $landmarks
    (`scale` `=` $scale^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernelized
//===----------------------------------------------------------------------===//

def Attn_KernelizedOp : Attn_Op<"kernelized", [Pure]> {
  let summary = "feature-map (linear) attention";
  let description = [{
    O_i = phi(q_i) . (sum_j phi(k_j) v_j^T) / (phi(q_i) . sum_j phi(k_j)),
    j over all keys, or j <= i when `causal` (computed by chunked prefix
    sums). A zero denominator yields 0. Feature maps (x a row of Q or K):
      favor:        phi(x) = exp(W x' - |x'|^2 / 2) / sqrt(m), x' = x D^-1/4
      rfa:          phi(x) = [sin(W x'), cos(W x')] / sqrt(m), x' = x D^-1/4
      elu_plus_one: phi(x) = elu(x) + 1
      relu:         phi(x) = max(x, 0)
    W (`omega`, `[m, D]`, required for favor and rfa only) holds the random
    projections; the runtime provides seeded generators, the compiler never
    draws random numbers.

    ```mlir
    %o = attn.kernelized %q, %k, %v omega(%w) feature_map = favor causal
         : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>,
            tensor<1x4x128x64xf32>, tensor<256x64xf32>)
         -> tensor<1x4x128x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value,
                       Optional<Attn_FloatTensor>:$omega,
                       Attn_FeatureMapAttr:$feature_map, UnitAttr:$causal);
  let results = (outs Attn_FloatTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`omega` `(` $omega^ `)`)?
    `feature_map` `=` custom<FeatureMapKeyword>($feature_map)
    (`causal` $causal^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Content based
//===----------------------------------------------------------------------===//

def Attn_LshOp : Attn_Op<"lsh", [Pure]> {
  let summary = "Reformer LSH attention with shared query/key";
  let description = [{
    Keys are the queries normalised to unit length. For each of `rounds`
    hash rounds r: h(x) = argmax([x R_r, -x R_r]) with R_r = rotations[r]
    (`[D, buckets / 2]`); positions are stably sorted by (bucket, position),
    cut into chunks of `chunk`, and each query attends to the keys of its
    own and the previous chunk (and only keys with the same bucket, not
    later positions when `causal`); a query attends to itself only when no
    other key is available. Rounds combine by the softmax of their
    log-sum-exps. Cost O(L log L).

    ```mlir
    %o = attn.lsh %qk, %v rotations(%r) buckets = 8 rounds = 2 chunk = 32
         : (tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32>,
            tensor<2x64x4xf32>) -> tensor<1x4x256x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query_key, Attn_FloatTensor:$value,
                       Attn_FloatTensor:$rotations, I64Attr:$buckets,
                       I64Attr:$rounds, I64Attr:$chunk, UnitAttr:$causal,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs Attn_FloatTensor:$output);
  let assemblyFormat = [{
    $query_key `,` $value `rotations` `(` $rotations `)`
    `buckets` `=` $buckets `rounds` `=` $rounds `chunk` `=` $chunk
    (`causal` $causal^)? (`scale` `=` $scale^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_RoutingOp : Attn_Op<"routing", [Pure]> {
  let summary = "Routing Transformer: attention within k-means clusters";
  let description = [{
    Each of the c centroids (`[c, D]`) takes its `top_k` nearest queries and
    its `top_k` nearest keys (by dot product with the unit-normalised
    centroid; balanced membership). Query i attends, with softmax, to the
    keys of every cluster it belongs to (not later keys when `causal`); its
    output is the mean over those clusters, 0 when it belongs to none.
    O(L^1.5) at c = sqrt(L).

    ```mlir
    %o = attn.routing %q, %k, %v centroids(%c) top_k = 16
         : (tensor<1x4x256x64xf32>, tensor<1x4x256x64xf32>,
            tensor<1x4x256x64xf32>, tensor<16x64xf32>)
         -> tensor<1x4x256x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$query, Attn_FloatTensor:$key,
                       Attn_FloatTensor:$value, Attn_FloatTensor:$centroids,
                       I64Attr:$top_k, UnitAttr:$causal,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs Attn_FloatTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value `centroids` `(` $centroids `)`
    `top_k` `=` $top_k (`causal` $causal^)? (`scale` `=` $scale^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixing and positions
//===----------------------------------------------------------------------===//

def Attn_FourierMixOp : Attn_Op<"fourier_mix", [Pure]> {
  let summary = "FNet token mixing: Re(FFT_seq(FFT_hidden(x)))";
  let description = [{
    On hidden states x `[B, L, Dm]`: y[b] = Re(DFT over L of (DFT over Dm of
    x[b])), unnormalised, same shape and type as x.

    ```mlir
    %y = attn.fourier_mix %x : tensor<2x128x768xf32> -> tensor<2x128x768xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input);
  let results = (outs Attn_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
  let hasVerifier = 1;
}

def Attn_RopeOp : Attn_Op<"rope", [Pure]> {
  let summary = "rotary position embedding applied to queries or keys";
  let description = [{
    For x `[B, H, L, D]` (D even) and position t of row l (`positions[l]` or
    `positions[b, l]` when given, else l): pair n (n < D/2) rotates by angle
    t * base^(-2n / D). `interleaved` pairs (x[2n], x[2n+1]) (GPT-J);
    `half` pairs (x[n], x[n + D/2]) (GPT-NeoX, Llama):
      y_a = x_a cos - x_b sin,  y_b = x_a sin + x_b cos.

    ```mlir
    %y = attn.rope %x style = half : tensor<1x8x16x64xf32> -> tensor<1x8x16x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$input,
                       Optional<Attn_IntTensor>:$positions,
                       DefaultValuedAttr<F64Attr, "10000.0">:$base,
                       Attn_RopeStyleAttr:$style);
  let results = (outs Attn_FloatTensor:$output);
  let assemblyFormat = [{
    $input (`positions` `(` $positions^ `:` type($positions) `)`)?
    `style` `=` custom<RopeStyleKeyword>($style) attr-dict `:` type($input)
    `->` type($output)
  }];
  let hasVerifier = 1;
}

def Attn_PagedKvOp : Attn_Op<"paged_kv", [Pure]> {
  let summary = "the rows of a paged KV cache as one tensor";
  let description = [{
    Keys or values kept in fixed-size pages (docs/Dialect.md, "Paged KV
    caches"): `pool` `[pages, H, P, D]` holds P rows of every head per page,
    `table` `[B, max_pages]` lists each sequence's pages in order. The
    result `[B, H, length, D]` is the first `length` rows of each sequence:

      result[b, h, j, :] = pool[table[b, j / P], h, j mod P, :]

    A table entry outside [0, pages) reads page 0 or pages - 1 (clamped,
    never out of bounds); entries past a sequence's rows are not read. The
    CPU decoding kernels read the pool through the table in place when both
    of an attention's K and V come from attn.paged_kv of one table and
    length; elsewhere attn-decompose-paged-kv gathers the rows.

    ```mlir
    %k = attn.paged_kv %pool[%table] length %n
        : tensor<?x2x16x64xf32>, tensor<1x?xi32> -> tensor<1x2x?x64xf32>
    ```
  }];
  let arguments = (ins Attn_FloatTensor:$pool, Attn_IntTensor:$table,
                       Index:$length);
  let results = (outs Attn_FloatTensor:$result);
  let assemblyFormat = [{
    $pool `[` $table `]` `length` $length attr-dict `:` type($pool) `,`
    type($table) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// P, the rows of each head in a page.
    int64_t getPageRows() {
      return cast<RankedTensorType>(getPool().getType()).getDimSize(2);
    }
  }];
}

#endif // ATTN_DIALECT_ATTN_IR_ATTNOPS_TD
