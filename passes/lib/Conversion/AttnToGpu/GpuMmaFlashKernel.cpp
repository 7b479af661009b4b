//===- GpuMmaFlashKernel.cpp - attention on m16n8k16 tensor-core tiles ----===//
//
// The f16 / bf16 kernel (GpuKernelEmitter.h; f32 with TF32 products,
// below), per workgroup (t, h, b) of 4 warps; warp w owns query rows
// first + 16 w + [0, 16) (with packed GQA heads, rows of several heads:
// tileRow). Lane l of a warp
// is (g, c) = (l / 4, l % 4), and holds, in the register fragments of PTX's
// mma.m16n8k16 (A: 16x16 row-major, B: 16x8 column-major, C: 16x8 f32):
//
//   A word a0 = row g,   cols 2c, 2c+1     a1 = row g+8, cols 2c, 2c+1
//     word a2 = row g,   cols 2c+8, 2c+9   a3 = row g+8, cols 2c+8, 2c+9
//   B word b0 = rows 2c, 2c+1 of col g     b1 = rows 2c+8, 2c+9 of col g
//   C c0, c1 = row g, cols 2c, 2c+1        c2, c3 = row g+8, same cols
//
// (a 16-bit pair per 32-bit word, the lower column in the low half).
// Per key tile of kt keys:
//
//   S[16 x kt] = Q K^T     A = Q (ldmatrix from workgroup memory, where
//                          it fits, else registers loaded once), B = K
//                          rows from workgroup memory (ldmatrix)
//   s = scale S (+ mods, region, mask)           in the C fragments, f32
//   m' = max(m, row max of s)                    quad shuffles (xor 1, 2)
//   p = exp(s - m'), l = l exp(m - m') + sum p   sums per lane until the end
//   O = O exp(m - m') + P V   A = P: the C fragments of two adjacent 8-key
//                          tiles of S are exactly the A fragment of 16 keys;
//                          B = V rows (ldmatrix.trans)
//
// and at the end O / l (l summed over the quad; rows that kept nothing
// store 0). Keys past the end of K are -inf and their V rows 0. Without
// mods, bias or a score region the scores are kept in log2 units (the scale
// times log2 e folded into one multiply) and p = 2^(s - m').
//
// Staging (FlashAttention-2's): K and V rows are copied as they lie in
// memory, 16-byte chunks of 8 elements, chunk k of row r stored at chunk
// k ^ (r mod 8) (mod the row's chunks when fewer) so that the 8 rows one
// ldmatrix phase reads fall in different banks. On CUDA the copies are
// cp.async (zero-filled past the ends) into a ring of the target's pipeline
// depth, one commit group per tile (GpuKernelEmitter::visitKeyTiles), where
// D and Dv are multiples of 8; else plain loads and stores.
// ldmatrix.x4 reads four 8x8 matrices whose rows lanes 8m .. 8m + 7
// address; lane (g, c) receives row g, columns 2c, 2c + 1 of each (or,
// .trans, rows 2c, 2c + 1 of column g). K's matrices are K's rows as B's
// columns; V's transposed are B of P V, so V needs no transposing copy.
//
// TF32 (f32 inputs, opt-in): mma.m16n8k8 with one element per word (A
// a0 = (g, c), a1 = (g+8, c), a2 = (g, c+4), a3 = (g+8, c+4); B b0 =
// (c, g), b1 = (c+4, g)), operands rounded by cvt.rna.tf32.f32, chunks of
// 4 elements; ldmatrix of 16-bit 8x8 matrices is then an 8x4 f32 matrix,
// lane (g, c) receiving element (g, c). P V permutes the 8 keys of a step
// so that S's C fragment is P's A fragment (accumulateTf32).
//
// 3xTF32 (opt-in): every product a b of f32 words runs as three TF32 mma,
// a_lo b_hi + a_hi b_lo + a_hi b_hi (small terms first), where x_hi is x
// rounded to TF32 and x_lo = x - x_hi (exact in f32) rounded again: the
// dropped a_lo b_lo and the rounding of the low parts leave about f32's
// error (2^-21 relative per product) instead of TF32's 2^-11.
//
// Unlike the scalar kernel, a dropped key still multiplies its V row by
// p = 0: an inf or NaN in V poisons the rows whose tile holds it (as in
// every tensor-core attention).
//
// Decoding shapes split their key tiles like the scalar kernel
// (GpuKernelEmitter.h): the partial O, m and l go to the `partials` buffer.
//
// CUDA gets nvvm.mma.sync, nvgpu.ldmatrix and nvgpu.device_async_copy. On
// Vulkan (`emulate-mma`) the tiles are 32-bit words in workgroup memory,
// copied synchronously in the same chunks and swizzle; each ldmatrix
// exchanges the lanes' row addresses through workgroup memory and hands
// each lane its words from the layout above, and each mma goes through
// workgroup memory too (lanes store their A and B words, every lane
// computes its four C entries from PTX's layout). That runs the same
// addressing, swizzle, ring and fragment bookkeeping on lavapipe.
//
//===----------------------------------------------------------------------===//
#include "GpuMmaFlashKernel.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include <cmath>

using namespace mlir;
using namespace mlir::attn;

/// Workgroup memory of the mma kernel with Q staged beside `stages` K / V
/// stages of `keyTile` rows (16-bit elements as they are, f32 as TF32
/// words), plus the emulation's fragment exchange (8 words a lane).
static int64_t stagedQueryBytes(int64_t rows, int64_t headDim, int64_t valueDim,
                                int64_t keyTile, Type element, int64_t stages,
                                bool emulated) {
  int64_t elementBytes = element.isF32() ? 4 : 2;
  int64_t kStep = element.isF32() ? 8 : 16;
  int64_t paddedDim = llvm::alignTo(headDim, kStep);
  int64_t paddedValueDim = llvm::alignTo(valueDim, 8);
  int64_t stageBytes = keyTile * (paddedDim + paddedValueDim) * elementBytes;
  int64_t emulationBytes = emulated ? rows / 16 * kWarp * 8 * 4 : 0;
  return rows * paddedDim * elementBytes + stages * stageBytes + emulationBytes;
}

Value MmaFlashEmitter::bitsOf(Value element) {
  if (element.getType().isInteger(32))
    return element;
  if (element.getType().isF32())
    return arith::BitcastOp::create(b, b.getI32Type(), element);
  if (!element.getType().isInteger(16))
    element = arith::BitcastOp::create(b, b.getI16Type(), element);
  return arith::ExtUIOp::create(b, b.getI32Type(), element);
}

Value MmaFlashEmitter::unpack(Value word, bool high) {
  Value bits = high ? arith::ShRUIOp::create(b, word, i32(16)) : word;
  if (elementType.isBF16()) // bf16 is the top half of an f32
    return arith::BitcastOp::create(
        b, b.getF32Type(),
        arith::ShLIOp::create(b, arith::AndIOp::create(b, bits, i32(0xffff)),
                              i32(16)));
  Value half = arith::BitcastOp::create(
      b, b.getF16Type(), arith::TruncIOp::create(b, b.getI16Type(), bits));
  return arith::ExtFOp::create(b, b.getF32Type(), half);
}

Value MmaFlashEmitter::loadBits(Value memref, Value outer, Value head,
                                Value row, Value col, Value valid,
                                int64_t rowLimit, int64_t colLimit) {
  Value r = arith::MinUIOp::create(b, row, idx(rowLimit - 1));
  Value c = arith::MinUIOp::create(b, col, idx(colLimit - 1));
  Value bits = bitsOf(load(memref, {outer, head, r, c}));
  return valid ? arith::SelectOp::create(b, valid, bits, i32(0)) : bits;
}

void MmaFlashEmitter::prologue() {
  elementType = cast<ShapedType>(op.getQuery().getType()).getElementType();
  // TF32 (f32 inputs, opt-in): one element per 32-bit word, 8 columns per
  // k-step; else two 16-bit elements per word, 16 columns per k-step.
  tf32 = elementType.isF32();
  elementBytes = tf32 ? 4 : 2;
  int64_t kStep = tf32 ? 8 : 16;
  dChunks = (headDim + kStep - 1) / kStep;
  paddedDim = dChunks * kStep;
  valueTiles = (valueDim + 7) / 8;
  paddedValueDim = valueTiles * 8;

  warp = arith::DivUIOp::create(b, tid, idx(kWarp));
  lane = arith::RemUIOp::create(b, tid, idx(kWarp));
  g = arith::DivUIOp::create(b, lane, idx(4));
  c4 = arith::RemUIOp::create(b, lane, idx(4));
  warpRow = arith::MulIOp::create(b, warp, idx(16));
  warpBase = arith::MulIOp::create(b, warp, idx(kWarp));
  asyncCopies = api->hasNativeMma() && headDim % chunkElements() == 0 &&
                valueDim % chunkElements() == 0 &&
                api->bufferElementType(elementType) == elementType;
  log2Scores = (!mods || mods.empty()) && !biasBuf && op.getScore().empty();
  for (int r = 0; r < 2; ++r) {
    rowInTile[r] = arith::AddIOp::create(
        b, warpRow, arith::AddIOp::create(b, g, idx(8 * r)));
    std::tie(rowHead[r], rowIndex[r], rowActive[r]) = tileRow(rowInTile[r]);
  }

  // Q's A fragments, once: word k of chunk kc holds row (k % 2 ? g + 8 : g)
  // and cols 16 kc + 2c (+ 8 for k >= 2), + 1.
  auto colValid = [&](Value col) -> Value {
    if (paddedDim == headDim)
      return Value();
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col,
                                 idx(headDim));
  };
  // Q in workgroup memory (FlashAttention-2's default) frees its
  // registers; where Q and every stage do not fit, Q stays in registers,
  // except past D = 128 (and for 3xTF32 past D + Dv = 128) where it would
  // not fit there either (the O accumulators take 4 Dv / 8 registers):
  // then one stage.
  auto fits = [&](int64_t stages) {
    return stagedQueryBytes(rows, headDim, valueDim, keyTile, elementType,
                            stages, !api->hasNativeMma()) <=
           target.workgroupMemoryBytes;
  };
  bool stageQuery = fits(depth);
  if (!stageQuery && prefersStagedQuery() && fits(1)) {
    stageQuery = true;
    depth = 1;
  }
  if (stageQuery) {
    queryRows = tileBuffer(rows, paddedDim / chunkElements());
    stageRows(
        queryRows, paddedDim / chunkElements(), queryBuf, queryLen, headDim,
        rows,
        [&](Value r) {
          auto [head, row, active] = tileRow(r);
          return std::make_tuple(batchIv, head, row, active);
        },
        [](Value r) { return r; });
    commitStage();
  } else {
    for (int64_t kc = 0; kc < dChunks; ++kc) {
      SmallVector<Value> words;
      for (int k = 0; k < 4; ++k) {
        if (tf32) {
          // Word k: row (k % 2 ? g + 8 : g), col 8 kc + c (+ 4 for k >= 2).
          Value col = arith::AddIOp::create(b, c4, idx(8 * kc + (k >= 2) * 4));
          words.push_back(loadBits(queryBuf, batchIv, rowHead[k % 2],
                                   rowIndex[k % 2], col, colValid(col),
                                   queryLen, headDim));
          continue;
        }
        Value col =
            arith::AddIOp::create(b, arith::MulIOp::create(b, c4, idx(2)),
                                  idx(16 * kc + (k >= 2 ? 8 : 0)));
        Value col1 = arith::AddIOp::create(b, col, idx(1));
        Value row = rowIndex[k % 2];
        words.push_back(
            pack(loadBits(queryBuf, batchIv, rowHead[k % 2], row, col,
                          colValid(col), queryLen, headDim),
                 loadBits(queryBuf, batchIv, rowHead[k % 2], row, col1,
                          colValid(col1), queryLen, headDim)));
      }
      qFragments.push_back(words);
    }
  }

  keyRows = tileBuffer(depth * keyTile, paddedDim / chunkElements());
  valueRows = tileBuffer(depth * keyTile, paddedValueDim / chunkElements());
  if (!api->hasNativeMma()) {
    mmaA = workgroupBuffer({invocations(), 4}, b.getI32Type());
    mmaB = workgroupBuffer({invocations(), 2}, b.getI32Type());
    rowAddresses = workgroupBuffer({invocations(), 2}, b.getI32Type());
  }
}

Value MmaFlashEmitter::tileBuffer(int64_t rowCount, int64_t rowChunks) {
  if (!api->hasNativeMma())
    return workgroupBuffer({rowCount, rowChunks * 4}, b.getI32Type());
  return workgroupBuffer({rowCount, rowChunks * chunkElements()},
                         api->bufferElementType(elementType));
}

std::tuple<Value, Value, Value> MmaFlashEmitter::tileRow(Value p) {
  Value count = packedHeads > 1 ? idx(packedHeads * queryLen) : tileRows;
  Value active = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, p, count);
  Value head = headIv, row = p;
  if (packedHeads > 1)
    std::tie(head, row) = unpackRow(headIv, p);
  // Rows past the tile's end compute on its first row and store nothing.
  row = arith::SelectOp::create(b, active, arith::AddIOp::create(b, first, row),
                                first);
  return {head, row, active};
}

SmallVector<Value> MmaFlashEmitter::queryFragment(int64_t kc) {
  if (!queryRows)
    return qFragments[kc];
  // Matrices: rows 0-7 and 8-15 of the warp's 16 by D chunk 2 kc, then by
  // chunk 2 kc + 1: a0, a1, a2, a3.
  Value half = arith::RemUIOp::create(
      b, arith::DivUIOp::create(b, lane, idx(8)), idx(2));
  Value row = arith::AddIOp::create(
      b, warpRow,
      arith::AddIOp::create(b, arith::MulIOp::create(b, half, idx(8)),
                            arith::RemUIOp::create(b, lane, idx(8))));
  Value chunk = arith::AddIOp::create(
      b, arith::DivUIOp::create(b, lane, idx(16)), idx(2 * kc));
  return loadMatrices(queryRows, paddedDim / chunkElements(), row, chunk, 4,
                      /*transpose=*/false);
}

Value MmaFlashEmitter::swizzle(Value row, Value chunk, int64_t rowChunks) {
  // XOR with row mod s stays inside aligned groups of s chunks: s is the
  // largest power of two up to 8 that divides the row's chunks.
  int64_t span = 8;
  while (rowChunks % span != 0)
    span /= 2;
  if (span == 1)
    return chunk;
  return arith::XOrIOp::create(b, chunk,
                               arith::AndIOp::create(b, row, idx(span - 1)));
}

std::pair<Value, Value>
MmaFlashEmitter::chunkSlot(Value, Value row, Value chunk, int64_t rowChunks) {
  return {row, swizzle(row, chunk, rowChunks)};
}

SmallVector<Value> MmaFlashEmitter::initialState() {
  // m and l of rows g and g + 8, then the C fragments of O.
  SmallVector<Value> state = {f32(-INFINITY), f32(-INFINITY), f32(0.0f),
                              f32(0.0f)};
  for (int64_t e = 0; e < 4 * valueTiles; ++e)
    state.push_back(f32(0.0f));
  return state;
}

void MmaFlashEmitter::stageTile(Value j0, Value tk) {
  auto staged = [&](Value r) { return stagedRow(r); };
  // Rows past the keys are read clamped (stageRows; paged: to the
  // capacity, before the table) and staged as zeros.
  auto keyRow = [&](Value r) {
    Value key = arith::AddIOp::create(b, j0, r);
    if (paged)
      key = arith::MinUIOp::create(b, key, idx(keyLen - 1));
    auto [outer, row] = keyRowAt(key);
    return std::make_tuple(
        outer, kvHead, row,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, r, tk).getResult());
  };
  int64_t rowLimit = paged ? pageRows : keyLen;
  stageRows(keyRows, paddedDim / chunkElements(), keyBuf, rowLimit, headDim,
            keyTile, keyRow, staged);
  stageRows(valueRows, paddedValueDim / chunkElements(), valueBuf, rowLimit,
            valueDim, keyTile, keyRow, staged);
}

void MmaFlashEmitter::stageRows(Value tiles, int64_t rowChunks, Value src,
                                int64_t rowLimit, int64_t dim, int64_t total,
                                SourceRowFn sourceOf,
                                function_ref<Value(Value)> stagedAt) {
  auto lt = [&](Value x, Value limit) -> Value {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, limit);
  };
  auto both = [&](Value x, Value y) -> Value {
    return arith::AndIOp::create(b, x, y);
  };
  // Invocation t copies chunks t, t + invocations, ...
  forEachShare(total * rowChunks, [&](Value e) {
    Value r = arith::DivUIOp::create(b, e, idx(rowChunks));
    Value chunk = arith::RemUIOp::create(b, e, idx(rowChunks));
    auto [row, stored] = chunkSlot(tiles, stagedAt(r), chunk, rowChunks);
    auto [outer, head, key, keyValid] = sourceOf(r);
    int64_t per = chunkElements();
    Value col0 = arith::MulIOp::create(b, chunk, idx(per));
    if (asyncCopies) {
      // 16 bytes, or none (zero fill) past tk or past dim; the source
      // address stays inside the tensor either way.
      Value valid = both(keyValid, lt(col0, idx(dim)));
      Value count = arith::SelectOp::create(b, valid, idx(per), idx(0));
      Value srcKey = arith::MinUIOp::create(b, key, idx(rowLimit - 1));
      Value srcCol = arith::SelectOp::create(b, valid, col0, idx(0));
      nvgpu::DeviceAsyncCopyOp::create(
          b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), tiles,
          ValueRange{row, arith::MulIOp::create(b, stored, idx(per))}, src,
          ValueRange{outer, head, srcKey, srcCol}, b.getIndexAttr(per), count,
          b.getUnitAttr());
    } else if (!api->hasNativeMma() && tf32) {
      // Four words of one element.
      for (int64_t w = 0; w < 4; ++w) {
        Value col = arith::AddIOp::create(b, col0, idx(w));
        memref::StoreOp::create(
            b,
            loadBits(src, outer, head, key, col,
                     both(keyValid, lt(col, idx(dim))), rowLimit, dim),
            tiles,
            {row, arith::AddIOp::create(
                      b, arith::MulIOp::create(b, stored, idx(4)), idx(w))});
      }
    } else if (!api->hasNativeMma()) {
      // Four words of two elements.
      for (int64_t w = 0; w < 4; ++w) {
        Value col = arith::AddIOp::create(b, col0, idx(2 * w));
        Value col1 = arith::AddIOp::create(b, col, idx(1));
        Value lo = loadBits(src, outer, head, key, col,
                            both(keyValid, lt(col, idx(dim))), rowLimit, dim);
        Value hi = loadBits(src, outer, head, key, col1,
                            both(keyValid, lt(col1, idx(dim))), rowLimit, dim);
        memref::StoreOp::create(
            b, pack(lo, hi), tiles,
            {row, arith::AddIOp::create(
                      b, arith::MulIOp::create(b, stored, idx(4)), idx(w))});
      }
    } else {
      // CUDA with rows that are not whole chunks: element by element.
      Type stagedType = cast<MemRefType>(tiles.getType()).getElementType();
      for (int64_t i = 0; i < per; ++i) {
        Value col = arith::AddIOp::create(b, col0, idx(i));
        Value bits = loadBits(src, outer, head, key, col,
                              both(keyValid, lt(col, idx(dim))), rowLimit, dim);
        if (!tf32)
          bits = arith::TruncIOp::create(b, b.getI16Type(), bits);
        Value element = arith::BitcastOp::create(b, stagedType, bits);
        memref::StoreOp::create(
            b, element, tiles,
            {row, arith::AddIOp::create(
                      b, arith::MulIOp::create(b, stored, idx(per)), idx(i))});
      }
    }
  });
}

SmallVector<Value> MmaFlashEmitter::loadMatrices(Value tiles, int64_t rowChunks,
                                                 Value row, Value chunk,
                                                 int64_t count,
                                                 bool transpose) {
  Value stored = swizzle(row, chunk, rowChunks);
  if (!api->hasNativeMma())
    return emulatedLoadMatrices(
        tiles, row, arith::MulIOp::create(b, stored, idx(4)), count, transpose);
  Type staged = cast<MemRefType>(tiles.getType()).getElementType();
  // Each 8x8 matrix of 16-bit elements is 8 rows of 16 bytes: of TF32
  // elements, an 8x4 matrix whose lane (g, c) receives element (g, c).
  auto type = VectorType::get({count, 4 / elementBytes}, staged);
  Value matrices = nvgpu::LdMatrixOp::create(
      b, type, tiles,
      ValueRange{row, arith::MulIOp::create(b, stored, idx(chunkElements()))},
      transpose, int32_t(count));
  SmallVector<Value> words;
  for (int64_t m = 0; m < count; ++m)
    words.push_back(LLVM::BitcastOp::create(
        b, b.getI32Type(), vector::ExtractOp::create(b, matrices, m)));
  return words;
}

SmallVector<Value> MmaFlashEmitter::emulatedLoadMatrices(Value tiles, Value row,
                                                         Value wordCol,
                                                         int64_t count,
                                                         bool transpose) {
  auto asI32 = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getI32Type(), v);
  };
  auto asIndex = [&](Value v) {
    return arith::IndexCastOp::create(b, b.getIndexType(), v);
  };
  memref::StoreOp::create(b, asI32(row), rowAddresses, {tid, idx(0)});
  memref::StoreOp::create(b, asI32(wordCol), rowAddresses, {tid, idx(1)});
  gpu::BarrierOp::create(b);
  // Word w of the row lane `l` of this warp addressed.
  auto rowWord = [&](Value l, Value w) {
    Value at = arith::AddIOp::create(b, warpBase, l);
    Value r = asIndex(load(rowAddresses, {at, idx(0)}));
    Value col = asIndex(load(rowAddresses, {at, idx(1)}));
    return load(tiles, {r, arith::AddIOp::create(b, col, w)});
  };
  SmallVector<Value> words;
  for (int64_t m = 0; m < count; ++m) {
    if (!transpose) {
      // Row g of matrix m, its word c.
      words.push_back(rowWord(arith::AddIOp::create(b, g, idx(8 * m)), c4));
      continue;
    }
    // Column g of matrix m, rows 2c and 2c + 1: element g of each row,
    // half g % 2 of its word g / 2.
    Value w = arith::DivUIOp::create(b, g, idx(2));
    Value shift = asI32(arith::MulIOp::create(
        b, arith::RemUIOp::create(b, g, idx(2)), idx(16)));
    Value halves[2];
    for (int k = 0; k < 2; ++k) {
      Value l = arith::AddIOp::create(b, arith::MulIOp::create(b, c4, idx(2)),
                                      idx(8 * m + k));
      halves[k] = arith::AndIOp::create(
          b, arith::ShRUIOp::create(b, rowWord(l, w), shift), i32(0xffff));
    }
    words.push_back(pack(halves[0], halves[1]));
  }
  gpu::BarrierOp::create(b);
  return words;
}

SmallVector<Value> MmaFlashEmitter::mma(ArrayRef<Value> a,
                                        ArrayRef<Value> bWords,
                                        ArrayRef<Value> c) {
  // The emulation splits per element, within one exchange of the
  // fragments: three exchanges would triple its barriers, which lavapipe
  // compiles as coroutine suspensions (minutes per shader).
  if (!tf32 || !splitTf32 || !api->hasNativeMma())
    return mmaOnce(a, bWords, c);
  auto [aHigh, aLow] = splitWords(a);
  auto [bHigh, bLow] = splitWords(bWords);
  SmallVector<Value> sum = mmaOnce(aLow, bHigh, c);
  sum = mmaOnce(aHigh, bLow, sum);
  return mmaOnce(aHigh, bHigh, sum);
}

std::pair<SmallVector<Value>, SmallVector<Value>>
MmaFlashEmitter::splitWords(ArrayRef<Value> words) {
  Type f32Type = b.getF32Type(), i32Type = b.getI32Type();
  SmallVector<Value> high, low;
  for (Value w : words) {
    Value h = toTf32(w);
    Value rest =
        arith::SubFOp::create(b, arith::BitcastOp::create(b, f32Type, w),
                              arith::BitcastOp::create(b, f32Type, h));
    high.push_back(h);
    low.push_back(arith::BitcastOp::create(b, i32Type, rest));
  }
  return {high, low};
}

SmallVector<Value> MmaFlashEmitter::mmaOnce(ArrayRef<Value> a,
                                            ArrayRef<Value> bWords,
                                            ArrayRef<Value> c) {
  if (!api->hasNativeMma())
    return emulatedMma(a, bWords, c);
  MLIRContext *ctx = b.getContext();
  Type f32Type = b.getF32Type();
  auto result = LLVM::LLVMStructType::getLiteral(
      ctx, {f32Type, f32Type, f32Type, f32Type});
  auto extract = [&](Value d) {
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(LLVM::ExtractValueOp::create(b, d, ArrayRef<int64_t>{i}));
    return out;
  };
  if (tf32) {
    SmallVector<Value> aOps, bOps;
    for (Value w : a)
      aOps.push_back(toTf32(w));
    for (Value w : bWords)
      bOps.push_back(toTf32(w));
    return extract(NVVM::MmaOp::create(
        b, result, aOps, bOps, c, ArrayRef<int64_t>{16, 8, 8},
        /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
        std::array<NVVM::MMATypes, 2>{NVVM::MMATypes::tf32,
                                      NVVM::MMATypes::tf32},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col}));
  }
  bool isF16 = elementType.isF16();
  // f16 operands are vector<2xf16> for nvvm.mma.sync, bf16 ones i32.
  auto operand = [&](Value word) -> Value {
    if (!isF16)
      return word;
    return LLVM::BitcastOp::create(b, VectorType::get({2}, b.getF16Type()),
                                   word);
  };
  SmallVector<Value> aOps, bOps;
  for (Value w : a)
    aOps.push_back(operand(w));
  for (Value w : bWords)
    bOps.push_back(operand(w));
  NVVM::MMATypes type = isF16 ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
  return extract(NVVM::MmaOp::create(
      b, result, aOps, bOps, c, ArrayRef<int64_t>{16, 8, 16},
      /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
      std::array<NVVM::MMATypes, 2>{type, type},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col}));
}

Value MmaFlashEmitter::toTf32(Value word) {
  if (!api->hasNativeMma()) {
    // Round the magnitude to 10 mantissa bits, halves away from zero (the
    // sign bit is untouched: the carry goes into the exponent, as it must).
    Value rounded = arith::AddIOp::create(b, word, i32(0x1000));
    return arith::AndIOp::create(b, rounded, i32(int32_t(0xffffe000u)));
  }
  return LLVM::CallIntrinsicOp::create(
             b, b.getI32Type(), b.getStringAttr("llvm.nvvm.f2tf32.rna"),
             ValueRange{arith::BitcastOp::create(b, b.getF32Type(), word)})
      .getResult(0);
}

SmallVector<Value> MmaFlashEmitter::emulatedMma(ArrayRef<Value> a,
                                                ArrayRef<Value> bWords,
                                                ArrayRef<Value> c) {
  for (auto [k, w] : llvm::enumerate(a))
    memref::StoreOp::create(b, w, mmaA, {tid, idx(k)});
  for (auto [k, w] : llvm::enumerate(bWords))
    memref::StoreOp::create(b, w, mmaB, {tid, idx(k)});
  gpu::BarrierOp::create(b);
  // m16n8k16 (two 16-bit elements per word) or m16n8k8 TF32 (one): of
  // the K = 8 p columns, A(row, k) is in lane 4 g + (k % 4p) / p, word
  // (row == g + 8) + 2 (k / 4p), element k % p; B(k, n) in lane
  // 4 n + (k % 4p) / p, word k / 4p, element k % p.
  int64_t p = 4 / elementBytes;
  auto element = [&](Value word, int64_t k) -> Value {
    if (tf32)
      return arith::BitcastOp::create(b, b.getF32Type(), toTf32(word));
    return unpack(word, k % p);
  };
  SmallVector<Value> out;
  for (int64_t i = 0; i < 4; ++i) {
    // C entry i: row g (+ 8 for i >= 2), col n = 2c + i % 2.
    Value n = arith::AddIOp::create(b, arith::MulIOp::create(b, c4, idx(2)),
                                    idx(i % 2));
    Value sum = c[i];
    for (int64_t k = 0; k < 8 * p; ++k) {
      auto laneOf = [&](Value quad) {
        return arith::AddIOp::create(
            b, warpBase,
            arith::AddIOp::create(b, arith::MulIOp::create(b, quad, idx(4)),
                                  idx((k % (4 * p)) / p)));
      };
      Value xWord = load(mmaA, {laneOf(g), idx(i / 2 + 2 * (k / (4 * p)))});
      Value yWord = load(mmaB, {laneOf(n), idx(k / (4 * p))});
      if (tf32 && splitTf32) {
        // 3xTF32: x_lo y_hi + x_hi y_lo + x_hi y_hi, as mma() on hardware.
        auto [xHigh, xLow] = splitWords({xWord});
        auto [yHigh, yLow] = splitWords({yWord});
        sum = fma(element(xLow[0], k), element(yHigh[0], k), sum);
        sum = fma(element(xHigh[0], k), element(yLow[0], k), sum);
        sum = fma(element(xHigh[0], k), element(yHigh[0], k), sum);
        continue;
      }
      sum = fma(element(xWord, k), element(yWord, k), sum);
    }
    out.push_back(sum);
  }
  gpu::BarrierOp::create(b);
  return out;
}

Value MmaFlashEmitter::quadReduce(Value x, bool sum) {
  int64_t width = api->shuffleWidth();
  for (int64_t offset : {1, 2}) {
    Value other = gpu::ShuffleOp::create(b, x, i32(offset), i32(width),
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    x = sum ? Value(arith::AddFOp::create(b, x, other))
            : Value(arith::MaximumFOp::create(b, x, other));
  }
  return x;
}

SmallVector<SmallVector<Value>> MmaFlashEmitter::scoreProducts() {
  int64_t keyTiles8 = keyTile / 8;
  // S = Q K^T, one 16x8 C fragment per 8 keys.
  SmallVector<SmallVector<Value>> s(keyTiles8,
                                    SmallVector<Value>(4, f32(0.0f)));
  // Lane l addresses row l % 8 of matrix l / 8 (of `count`).
  Value laneRow = arith::RemUIOp::create(b, lane, idx(8));
  auto laneMatrix = [&](int64_t count) {
    return arith::RemUIOp::create(b, arith::DivUIOp::create(b, lane, idx(8)),
                                  idx(count));
  };
  // Per pair of D chunks (kc, kc + 1): Q's A fragments, then per 8 keys
  // one ldmatrix.x4 of K, i.e. B's two words for kc and kc + 1 (rows: keys
  // 8 nt .. 8 nt + 7, the 8-column chunks 2 kc .. 2 kc + 3 of D).
  for (int64_t kc = 0; kc < dChunks; kc += 2) {
    int64_t count = kc + 1 < dChunks ? 4 : 2;
    SmallVector<Value> a0 = queryFragment(kc), a1;
    if (count == 4)
      a1 = queryFragment(kc + 1);
    Value chunk = arith::AddIOp::create(b, laneMatrix(count), idx(2 * kc));
    for (int64_t nt = 0; nt < keyTiles8; ++nt) {
      Value key = stagedRow(arith::AddIOp::create(b, laneRow, idx(8 * nt)));
      SmallVector<Value> words = loadMatrices(
          keyRows, paddedDim / chunkElements(), key, chunk, count, false);
      s[nt] = mma(a0, {words[0], words[1]}, s[nt]);
      if (count == 4)
        s[nt] = mma(a1, {words[2], words[3]}, s[nt]);
    }
  }
  return s;
}

SmallVector<Value> MmaFlashEmitter::processTile(ValueRange state, Value j0,
                                                Value tk, bool masked) {
  int64_t keyTiles8 = keyTile / 8;
  SmallVector<SmallVector<Value>> s = scoreProducts();

  // Scores: scaled, modded, masked; keys past the end of K dropped. In
  // log2 units when nothing but a mask follows the scale.
  Value scaleValue =
      f32(log2Scores ? float(double(scale()) * M_LOG2E) : scale());
  bool shortTiles = keyLen % keyTile != 0 || paged;
  for (int64_t nt = 0; nt < keyTiles8; ++nt)
    for (int64_t i = 0; i < 4; ++i) {
      Value offset = arith::AddIOp::create(
          b, arith::MulIOp::create(b, c4, idx(2)), idx(8 * nt + i % 2));
      Value j = arith::AddIOp::create(b, j0, offset);
      Value x = arith::MulFOp::create(b, s[nt][i], scaleValue);
      if (shortTiles) {
        // Score a real key (segment ids are read at j), then drop it.
        Value inside =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, offset, tk);
        x = finishRowScore(
            x, i / 2, arith::MinUIOp::create(b, j, idx(keyLen - 1)), masked);
        x = arith::SelectOp::create(b, inside, x, f32(-INFINITY));
      } else {
        x = finishRowScore(x, i / 2, j, masked);
      }
      s[nt][i] = x;
    }

  // Online softmax per row r (entries i with i / 2 == r).
  SmallVector<Value> next(state.begin(), state.end());
  Value alpha[2];
  for (int r = 0; r < 2; ++r) {
    Value rowMax = f32(-INFINITY);
    for (int64_t nt = 0; nt < keyTiles8; ++nt)
      for (int i = 2 * r; i < 2 * r + 2; ++i)
        rowMax = arith::MaximumFOp::create(b, rowMax, s[nt][i]);
    rowMax = quadReduce(rowMax, /*sum=*/false);
    Value m = state[r];
    Value mNew = arith::MaximumFOp::create(b, m, rowMax);
    // A row that has kept nothing yet subtracts 0 (exp(-inf) = 0).
    Value reference = arith::SelectOp::create(
        b,
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mNew,
                              f32(-INFINITY)),
        f32(0.0f), mNew);
    alpha[r] = expOfScore(arith::SubFOp::create(b, m, reference));
    Value l = arith::MulFOp::create(b, state[2 + r], alpha[r]);
    for (int64_t nt = 0; nt < keyTiles8; ++nt)
      for (int i = 2 * r; i < 2 * r + 2; ++i) {
        s[nt][i] = expOfScore(arith::SubFOp::create(b, s[nt][i], reference));
        l = arith::AddFOp::create(b, l, s[nt][i]);
      }
    next[r] = mNew;
    next[2 + r] = l;
  }

  // O = alpha O + P V: P's A fragment for keys [16 kc, 16 kc + 16) is the
  // C fragments of 8-key tiles 2 kc and 2 kc + 1.
  SmallVector<SmallVector<Value>> acc(valueTiles);
  for (int64_t v = 0; v < valueTiles; ++v)
    for (int64_t i = 0; i < 4; ++i)
      acc[v].push_back(
          arith::MulFOp::create(b, state[4 + 4 * v + i], alpha[i / 2]));
  accumulateValues(s, acc);
  for (int64_t v = 0; v < valueTiles; ++v)
    for (int64_t i = 0; i < 4; ++i)
      next[4 + 4 * v + i] = acc[v][i];
  return next;
}

void MmaFlashEmitter::accumulateValues(ArrayRef<SmallVector<Value>> s,
                                       SmallVector<SmallVector<Value>> &acc) {
  if (tf32)
    return accumulateTf32(s, acc);
  // Lane l addresses row l % 8 of matrix l / 8 (of `count`).
  Value laneRow = arith::RemUIOp::create(b, lane, idx(8));
  auto laneMatrix = [&](int64_t count) {
    return arith::RemUIOp::create(b, arith::DivUIOp::create(b, lane, idx(8)),
                                  idx(count));
  };
  for (int64_t kc = 0; kc < keyTile / 16; ++kc) {
    ArrayRef<Value> s0 = s[2 * kc], s1 = s[2 * kc + 1];
    SmallVector<Value> p = {packF32(s0[0], s0[1]), packF32(s0[2], s0[3]),
                            packF32(s1[0], s1[1]), packF32(s1[2], s1[3])};
    // Matrices (transposed): keys 16 kc .. 16 kc + 7 and 16 kc + 8 ..
    // 16 kc + 15 of value chunk v, then of chunk v + 1: B's two words for
    // value tiles v and v + 1.
    for (int64_t v = 0; v < valueTiles; v += 2) {
      int64_t count = v + 1 < valueTiles ? 4 : 2;
      Value matrix = laneMatrix(count);
      Value key = stagedRow(arith::AddIOp::create(
          b, laneRow,
          arith::AddIOp::create(
              b,
              arith::MulIOp::create(
                  b, arith::RemUIOp::create(b, matrix, idx(2)), idx(8)),
              idx(16 * kc))));
      Value chunk = arith::AddIOp::create(
          b, arith::DivUIOp::create(b, matrix, idx(2)), idx(v));
      SmallVector<Value> words = loadMatrices(
          valueRows, paddedValueDim / chunkElements(), key, chunk, count, true);
      acc[v] = mma(p, {words[0], words[1]}, acc[v]);
      if (count == 4)
        acc[v + 1] = mma(p, {words[2], words[3]}, acc[v + 1]);
    }
  }
}

void MmaFlashEmitter::accumulateTf32(ArrayRef<SmallVector<Value>> p,
                                     SmallVector<SmallVector<Value>> &acc) {
  // Per 8 keys, A = P with its key slots permuted: slot c holds key 2c and
  // slot c + 4 key 2c + 1, which is where the C fragment of S already has
  // them (a0, a1, a2, a3 = c0, c2, c1, c3); B takes the same permutation,
  // b0 = V[2c][n], b1 = V[2c + 1][n], read element by element from the
  // swizzled rows (ldmatrix.trans moves 16-bit elements only).
  int64_t rowChunks = paddedValueDim / chunkElements();
  auto valueWord = [&](Value key, Value col) {
    Value row = stagedRow(key);
    Value chunk = arith::DivUIOp::create(b, col, idx(4));
    Value at = arith::AddIOp::create(
        b, arith::MulIOp::create(b, swizzle(row, chunk, rowChunks), idx(4)),
        arith::RemUIOp::create(b, col, idx(4)));
    return bitsOf(load(valueRows, {row, at}));
  };
  for (int64_t nt = 0; nt < keyTile / 8; ++nt) {
    ArrayRef<Value> c = p[nt];
    SmallVector<Value> a = {bitsOf(c[0]), bitsOf(c[2]), bitsOf(c[1]),
                            bitsOf(c[3])};
    Value key0 = arith::AddIOp::create(b, arith::MulIOp::create(b, c4, idx(2)),
                                       idx(8 * nt));
    Value key1 = arith::AddIOp::create(b, key0, idx(1));
    for (int64_t v = 0; v < valueTiles; ++v) {
      Value col = arith::AddIOp::create(b, g, idx(8 * v));
      acc[v] = mma(a, {valueWord(key0, col), valueWord(key1, col)}, acc[v]);
    }
  }
}

void MmaFlashEmitter::forEachOutputEntry(
    function_ref<void(int64_t e, int r, Value col)> store) {
  for (int64_t v = 0; v < valueTiles; ++v)
    for (int64_t i = 0; i < 4; ++i) {
      int r = i / 2;
      Value col = arith::AddIOp::create(b, arith::MulIOp::create(b, c4, idx(2)),
                                        idx(8 * v + i % 2));
      Value keep = rowActive[r];
      if (paddedValueDim != valueDim) // padded columns hold zeros
        keep = arith::AndIOp::create(
            b, keep,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ult, col,
                                  idx(valueDim)));
      auto guarded = scf::IfOp::create(b, keep, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(guarded.thenBlock());
      store(4 * v + i, r, col);
    }
}

void MmaFlashEmitter::storeResult(ValueRange final) {
  Type outElement = cast<MemRefType>(outBuf.getType()).getElementType();
  Value inverse[2], none[2];
  for (int r = 0; r < 2; ++r) {
    Value l = quadReduce(final[2 + r], /*sum=*/true);
    none[r] = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, f32(0.0f));
    inverse[r] = arith::DivFOp::create(b, f32(1.0f), l);
  }
  forEachOutputEntry([&](int64_t e, int r, Value col) {
    Value o = arith::SelectOp::create(
        b, none[r], f32(0.0f),
        arith::MulFOp::create(b, final[4 + e], inverse[r]));
    memref::StoreOp::create(b, fromF32(o, outElement), outBuf,
                            {batchIv, rowHead[r], rowIndex[r], col});
  });
}

void MmaFlashEmitter::storePartials(ValueRange final, Value workgroup) {
  // Unnormalized O from the C fragments; m and l (summed over the quad)
  // from the first lane of each quad.
  forEachOutputEntry([&](int64_t e, int r, Value col) {
    memref::StoreOp::create(b, final[4 + e], partialsBuf,
                            {workgroup, rowInTile[r], col});
  });
  Value firstLane =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, c4, idx(0));
  for (int r = 0; r < 2; ++r) {
    Value l = quadReduce(final[2 + r], /*sum=*/true);
    auto store =
        scf::IfOp::create(b, arith::AndIOp::create(b, rowActive[r], firstLane),
                          /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(store.thenBlock());
    // The merge kernel reads m in natural units.
    Value m =
        log2Scores ? arith::MulFOp::create(b, final[r], f32(M_LN2)) : final[r];
    memref::StoreOp::create(b, m, partialsBuf,
                            {workgroup, rowInTile[r], idx(valueDim)});
    memref::StoreOp::create(b, l, partialsBuf,
                            {workgroup, rowInTile[r], idx(valueDim + 1)});
  }
}

bool mlir::attn::usesMmaKernel(TiledAttention attention, const KernelPlan &plan,
                               const TargetDescription &target, bool emulateMma,
                               F32Mma f32Mma) {
  OnlineAttentionOp op = attention.tile;
  Type element = cast<ShapedType>(op.getQuery().getType()).getElementType();
  auto sameType = [&](Value v) {
    return cast<ShapedType>(v.getType()).getElementType() == element;
  };
  // 3xTF32 takes head dims up to 64 (Dv too) with Q in registers. Up to
  // 128 it needs Q in workgroup memory beside one K / V stage: in
  // registers, Q's high and low parts and the O accumulators push the f32
  // kernel (254 registers with TF32 at D = 128) into spills. Elsewhere the
  // exact scalar kernel runs.
  auto dimOf = [](Value v) {
    return cast<ShapedType>(v.getType()).getShape().back();
  };
  int64_t headDim = dimOf(op.getQuery()), valueDim = dimOf(op.getValue());
  std::shared_ptr<const GpuTargetInfo> api = GpuTargetInfo::get(target);
  auto splitFits = [&] {
    if (headDim <= 64 && valueDim <= 64)
      return true;
    return headDim <= 128 && valueDim <= 128 && api &&
           stagedQueryBytes(plan.queryTiling.tile, headDim, valueDim,
                            plan.keyTile, element, /*stages=*/1,
                            !api->hasNativeMma()) <=
               target.workgroupMemoryBytes;
  };
  bool f32OnMma =
      f32Mma == F32Mma::Tf32 || (f32Mma == F32Mma::Tf32x3 && splitFits());
  return api && (api->hasNativeMma() || emulateMma) &&
         (element.isF16() || element.isBF16() ||
          (f32OnMma && element.isF32())) &&
         sameType(op.getKey()) && sameType(op.getValue()) && plan.keyTile > 0 &&
         plan.keyTile % 16 == 0 && plan.queryTiling.tile % 16 == 0;
}

std::unique_ptr<GpuKernelEmitter> mlir::attn::makeMmaFlashEmitter(
    func::FuncOp host, TiledAttention attention, const KernelPlan &plan,
    const TargetDescription &target, bool countTiles, F32Mma f32Mma) {
  return std::make_unique<MmaFlashEmitter>(host, attention, plan, target,
                                           countTiles, f32Mma);
}
