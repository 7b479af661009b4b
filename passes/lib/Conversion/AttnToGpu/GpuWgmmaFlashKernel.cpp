//===- GpuWgmmaFlashKernel.cpp - attention on warpgroup mma (sm_90a) ------===//
//
// Hopper's variant of the tensor-core kernel (GpuMmaFlashKernel.cpp): the
// same warps, 16 query rows each, now in warpgroups of 4 (64 rows; sm_90a's
// workgroups hold 128 rows, two warpgroups sharing each staged K / V tile),
// the same staging ring, online softmax and stores, with both products of a
// key tile as `wgmma.mma_async` m64nNk16 (f32 accumulators), each
// warpgroup's on its own 64 rows:
//
//   S[64 x kt] = Q K^T   A = Q from workgroup memory (or, where Q does not
//                        fit there, its register fragments), B = the staged
//                        K rows, N = kt; one wgmma per 16 columns of D
//   O += P V             A = P in registers (S's accumulators rounded to the
//                        input type), B = the staged V rows read N-major
//                        (`imm-trans-b`), N = Dv; one wgmma per 16 keys
//
// A thread's accumulator entries are the mma.sync C fragments of its warp's
// 16 rows, one per 8 columns (d[4j .. 4j + 3] = rows g, g + 8 of columns
// 8j + 2c, + 1), and its A fragment per 16 columns is mma.sync's m16n8k16
// A: the softmax and the stores of the mma.sync kernel serve unchanged.
//
// Workgroup memory: wgmma reads shared operands through a 64-bit matrix
// descriptor (start address, leading and stride byte offsets, swizzle
// mode). Every staged tile here is in the 128-byte swizzle layout: its
// columns are cut into blocks of 64 elements (one 128-byte row each), block
// b of all rows stored before block b + 1, and 16-byte chunk k of a row r
// stored at chunk k ^ (r mod 8) of its 128 bytes; the buffers are
// 1024-byte aligned, since the hardware swizzles absolute address bits
// ([4, 7) ^= [7, 10)). Then Q and K are K-major operands (8-row groups
// 1024 bytes apart, the stride offset; a k-step of 16 columns starts 32
// bytes further into the row), and V is an N-major operand (8-key groups
// 1024 bytes apart, 64-column blocks one block apart: the leading offset).
// The copies are the ring's cp.async of the mma.sync kernel, placed by
// chunkSlot; a proxy fence (`fence.proxy.async.shared::cta`) after each wait
// makes them visible to wgmma, which reads through the async proxy.
//
// Each product is one batch: `wgmma.fence`, its wgmma, one commit group,
// `wgmma.wait_group 0`. The accumulators pass through an empty `asm
// volatile` before the fence and after the wait so that no arithmetic on
// them moves into the asynchronous window.
//
// `nvvm.wgmma.mma_async` takes A as a descriptor only, and P V needs A in
// registers: both forms are emitted here as inline PTX by one function
// (issueWgmma).
//
// On Vulkan (`emulate-wgmma`) the tiles are 32-bit words at the same byte
// offsets in the same layout, the descriptors are built the same way (with
// the buffer's start as address 0), and each wgmma is computed by every
// thread for its own accumulator entries: it decodes start, offsets and
// swizzle from the descriptor words to find each A and B element in
// workgroup memory (A from registers through an exchange, as the mma.sync
// emulation does). That runs the layout, the descriptors and the fragment
// bookkeeping on lavapipe against the f64 reference; the instructions, the
// asynchrony and the fences are left to a real GPU.
//
//===----------------------------------------------------------------------===//
#include "GpuMmaFlashKernel.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::attn;

namespace {

/// A swizzle atom: 8 rows of 128 bytes (64 16-bit elements).
constexpr int64_t kAtomElements = 64;
constexpr int64_t kRowBytes = 128;
constexpr int64_t kAtomBytes = 8 * kRowBytes;

class WgmmaFlashEmitter : public MmaFlashEmitter {
public:
  WgmmaFlashEmitter(func::FuncOp host, TiledAttention attention,
                    const KernelPlan &plan, const TargetDescription &target,
                    bool countTiles)
      : MmaFlashEmitter(host, attention, plan, target, countTiles,
                        F32Mma::None) {}

private:
  /// An operand in workgroup memory: its buffer and the two 32-bit halves
  /// of its matrix descriptor; N-major (B of P V) or K-major.
  struct SharedOperand {
    Value tiles, low, high;
    bool nMajor = false;
  };

  Value tileBuffer(int64_t rowCount, int64_t rowChunks) override;
  std::pair<Value, Value> chunkSlot(Value tiles, Value row, Value chunk,
                                    int64_t rowChunks) override;
  bool prefersStagedQuery() const override { return true; }
  void waitForStages(int64_t pending) override;
  SmallVector<SmallVector<Value>> scoreProducts() override;
  void accumulateValues(ArrayRef<SmallVector<Value>> p,
                        SmallVector<SmallVector<Value>> &acc) override;

  /// The operand of `tiles` starting `byteOffset` bytes into it, with the
  /// given leading and stride byte offsets, 128-byte swizzle.
  SharedOperand sharedOperand(Value tiles, Value byteOffset,
                              int64_t leadingBytes, int64_t strideBytes,
                              bool nMajor);
  /// Bytes from the start of a tile buffer to row `row` of 64-column block
  /// `block`, for buffers of `rows` rows.
  Value blockOffset(int64_t block, int64_t rows, Value row);
  /// This warpgroup's first row of the query tile, and this warp's first
  /// row within the warpgroup's 64.
  Value warpgroupRow() {
    return arith::MulIOp::create(b, arith::DivUIOp::create(b, warp, idx(4)),
                                 idx(64));
  }
  Value rowInWarpgroup() { return arith::RemUIOp::create(b, warpRow, idx(64)); }
  /// One k-step of 16: A is `aShared`, or else the 4 words `aWords` of
  /// each thread; B is `bShared`.
  struct Step {
    SmallVector<Value> aWords;
    std::optional<SharedOperand> aShared;
    SharedOperand bShared;
    /// CUDA: the 64-bit descriptors of aShared (if any) and bShared.
    Value aDescriptor, bDescriptor;
  };
  /// acc (N / 2 f32 per thread, C fragments) + the sum of the steps' A B:
  /// on CUDA one batch (fence, a wgmma per step, commit, wait), its
  /// operands computed before the fence.
  SmallVector<Value> multiplyAccumulate(ArrayRef<Step> steps,
                                        ArrayRef<Value> acc);
  SmallVector<Value> issueWgmma(const Step &step, ArrayRef<Value> acc);
  /// The 64-bit descriptor of `operand`: high word << 32 | low word.
  Value descriptorOf(const SharedOperand &operand);
  SmallVector<Value> emulatedWgmma(const Step &step, ArrayRef<Value> acc);
  /// The 16-bit element at byte `address` of an emulated tile buffer (32-bit
  /// words, rows of 32), as f32.
  Value emulatedElement(Value tiles, Value address);
  /// The byte address of element (mn, k) of `operand` as the hardware finds
  /// it from the descriptor: start, leading and stride offsets, swizzle.
  Value operandAddress(const SharedOperand &operand, Value mn, Value k);
  /// `value` through an empty volatile asm, so that nothing computing or
  /// reading it moves into the window between wgmma.fence and the wait.
  Value pin(Value value);
};

Value WgmmaFlashEmitter::tileBuffer(int64_t rowCount, int64_t rowChunks) {
  int64_t blocks = rowChunks * chunkElements() / kAtomElements;
  if (!api->hasNativeMma())
    return workgroupBuffer({blocks * rowCount, kRowBytes / 4}, b.getI32Type());
  return workgroupBuffer({blocks * rowCount, kAtomElements}, elementType,
                         kAtomBytes);
}

std::pair<Value, Value> WgmmaFlashEmitter::chunkSlot(Value tiles, Value row,
                                                     Value chunk,
                                                     int64_t rowChunks) {
  // Chunk k of row r: block k / 8, chunk (k mod 8) ^ (r mod 8) of row r of
  // that block.
  int64_t blocks = rowChunks * chunkElements() / kAtomElements;
  int64_t rows = cast<MemRefType>(tiles.getType()).getDimSize(0) / blocks;
  Value block = arith::DivUIOp::create(b, chunk, idx(8));
  Value at =
      arith::AddIOp::create(b, arith::MulIOp::create(b, block, idx(rows)), row);
  Value stored =
      arith::XOrIOp::create(b, arith::RemUIOp::create(b, chunk, idx(8)),
                            arith::RemUIOp::create(b, row, idx(8)));
  return {at, stored};
}

void WgmmaFlashEmitter::waitForStages(int64_t pending) {
  MmaFlashEmitter::waitForStages(pending);
  // cp.async writes through the generic proxy, wgmma reads through the
  // async one: each thread fences its own copies before the barrier.
  if (api->hasNativeMma())
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(b.getContext(),
                                   NVVM::SharedSpace::shared_cta));
}

Value WgmmaFlashEmitter::blockOffset(int64_t block, int64_t rows, Value row) {
  return arith::MulIOp::create(
      b, arith::AddIOp::create(b, idx(block * rows), row), idx(kRowBytes));
}

WgmmaFlashEmitter::SharedOperand
WgmmaFlashEmitter::sharedOperand(Value tiles, Value byteOffset,
                                 int64_t leadingBytes, int64_t strideBytes,
                                 bool nMajor) {
  Type i32Type = b.getI32Type();
  Value address = byteOffset;
  if (api->hasNativeMma())
    address = arith::AddIOp::create(
        b, memref::ExtractAlignedPointerAsIndexOp::create(b, tiles), address);
  Value start = arith::IndexCastUIOp::create(b, i32Type, address);
  // Low word: start >> 4 (14 bits), leading offset >> 4 at bit 16; high
  // word: stride offset >> 4, layout 1 (128-byte swizzle) at bit 62.
  Value low = arith::OrIOp::create(
      b,
      arith::AndIOp::create(b, arith::ShRUIOp::create(b, start, i32(4)),
                            i32(0x3fff)),
      i32((leadingBytes >> 4) << 16));
  Value high = i32((strideBytes >> 4) | (1 << 30));
  return {tiles, low, high, nMajor};
}

Value WgmmaFlashEmitter::pin(Value value) {
  Type type = value.getType();
  std::string constraints = type.isF32()         ? "=f,0"
                            : type.isInteger(64) ? "=l,0"
                                                 : "=r,0";
  return LLVM::InlineAsmOp::create(b, type, ValueRange{value}, "", constraints,
                                   /*has_side_effects=*/true,
                                   /*is_align_stack=*/false,
                                   LLVM::tailcallkind::TailCallKind::None,
                                   /*asm_dialect=*/LLVM::AsmDialectAttr(),
                                   /*operand_attrs=*/ArrayAttr())
      .getResult(0);
}

SmallVector<Value> WgmmaFlashEmitter::multiplyAccumulate(ArrayRef<Step> steps,
                                                         ArrayRef<Value> acc) {
  SmallVector<Value> sums(acc);
  if (!api->hasNativeMma()) {
    for (const Step &step : steps)
      sums = emulatedWgmma(step, sums);
    return sums;
  }
  // Every register a wgmma reads is final before the fence (else ptxas
  // inserts a warpgroup.arrive of its own).
  SmallVector<Step> pinned(steps);
  for (Step &step : pinned) {
    for (Value &word : step.aWords)
      word = pin(word);
    if (step.aShared)
      step.aDescriptor = pin(descriptorOf(*step.aShared));
    step.bDescriptor = pin(descriptorOf(step.bShared));
  }
  for (Value &sum : sums)
    sum = pin(sum);
  NVVM::WgmmaFenceAlignedOp::create(b);
  for (const Step &step : pinned)
    sums = issueWgmma(step, sums);
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
  for (Value &sum : sums)
    sum = pin(sum);
  return sums;
}

Value WgmmaFlashEmitter::descriptorOf(const SharedOperand &operand) {
  Type i64Type = b.getI64Type();
  Value low = arith::ExtUIOp::create(b, i64Type, operand.low);
  Value high = arith::ExtUIOp::create(b, i64Type, operand.high);
  return arith::OrIOp::create(
      b, low,
      arith::ShLIOp::create(
          b, high, arith::ConstantIntOp::create(b, i64Type, 32).getResult()));
}

SmallVector<Value> WgmmaFlashEmitter::issueWgmma(const Step &step,
                                                 ArrayRef<Value> acc) {
  int64_t count = acc.size();
  std::string type = elementType.isF16() ? "f16" : "bf16";
  // Operands: the accumulators' outputs, A (4 words or a descriptor), B's
  // descriptor, then the accumulators' inputs tied to their outputs.
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "wgmma.mma_async.sync.aligned.m64n" << 2 * count << "k16.f32." << type
     << "." << type << " {";
  for (int64_t i = 0; i < count; ++i)
    os << (i ? ", $" : "$") << i;
  os << "}, ";
  SmallVector<Value> operands;
  std::string constraints;
  for (int64_t i = 0; i < count; ++i)
    constraints += i ? ",=f" : "=f";
  int64_t next = count;
  if (step.aShared) {
    os << "$" << next++;
    operands.push_back(step.aDescriptor);
    constraints += ",l";
  } else {
    os << "{";
    for (auto [i, word] : llvm::enumerate(step.aWords)) {
      os << (i ? ", $" : "$") << next++;
      operands.push_back(word);
      constraints += ",r";
    }
    os << "}";
  }
  os << ", $" << next++;
  operands.push_back(step.bDescriptor);
  constraints += ",l";
  // scale-d 1 (accumulate), scales of A and B 1, then the transposes: A's
  // only when it is in workgroup memory (K-major: 0), B's 1 when N-major.
  os << ", 1, 1, 1" << (step.aShared ? ", 0" : "") << ", "
     << (step.bShared.nMajor ? 1 : 0) << ";";
  for (int64_t i = 0; i < count; ++i) {
    operands.push_back(acc[i]);
    constraints += "," + std::to_string(i);
  }
  auto result = LLVM::LLVMStructType::getLiteral(
      b.getContext(), SmallVector<Type>(count, b.getF32Type()));
  Value d = LLVM::InlineAsmOp::create(b, result, operands, text, constraints,
                                      /*has_side_effects=*/true,
                                      /*is_align_stack=*/false,
                                      LLVM::tailcallkind::TailCallKind::None,
                                      /*asm_dialect=*/LLVM::AsmDialectAttr(),
                                      /*operand_attrs=*/ArrayAttr())
                .getResult(0);
  SmallVector<Value> out;
  for (int64_t i = 0; i < count; ++i)
    out.push_back(LLVM::ExtractValueOp::create(b, d, ArrayRef<int64_t>{i}));
  return out;
}

Value WgmmaFlashEmitter::operandAddress(const SharedOperand &operand, Value mn,
                                        Value k) {
  auto field = [&](Value word, int64_t shift) {
    Value bits = arith::AndIOp::create(
        b, arith::ShRUIOp::create(b, word, i32(shift)), i32(0x3fff));
    return arith::ShLIOp::create(b, bits, i32(4)).getResult();
  };
  auto add = [&](Value x, Value y) {
    return arith::AddIOp::create(b, x, y).getResult();
  };
  auto mul = [&](Value x, int64_t y) {
    return arith::MulIOp::create(b, x, i32(y)).getResult();
  };
  auto div = [&](Value x, int64_t y) {
    return arith::DivUIOp::create(b, x, i32(y)).getResult();
  };
  auto rem = [&](Value x, int64_t y) {
    return arith::RemUIOp::create(b, x, i32(y)).getResult();
  };
  Value start = field(operand.low, 0);
  Value leading = field(operand.low, 16);
  Value stride = field(operand.high, 0);
  Value address;
  if (!operand.nMajor) {
    // K-major, 128-byte swizzle: rows of 128 bytes, 8-row groups `stride`
    // apart, k contiguous (the leading offset is unused).
    address = add(start, arith::MulIOp::create(b, div(mn, 8), stride));
    address = add(address, mul(rem(mn, 8), kRowBytes));
    address = add(address, mul(k, 2));
  } else {
    // N-major: 64 columns contiguous per 128-byte row (one k), 8-k groups
    // `stride` apart, 64-column blocks `leading` apart.
    address =
        add(start, arith::MulIOp::create(b, div(mn, kAtomElements), leading));
    address = add(address, arith::MulIOp::create(b, div(k, 8), stride));
    address = add(address, mul(rem(k, 8), kRowBytes));
    address = add(address, mul(rem(mn, kAtomElements), 2));
  }
  // The swizzle: address bits [4, 7) ^= bits [7, 10).
  Value row = arith::AndIOp::create(
      b, arith::ShRUIOp::create(b, address, i32(7)), i32(7));
  return arith::XOrIOp::create(b, address,
                               arith::ShLIOp::create(b, row, i32(4)));
}

Value WgmmaFlashEmitter::emulatedElement(Value tiles, Value address) {
  auto asIndex = [&](Value v) {
    return arith::IndexCastUIOp::create(b, b.getIndexType(), v);
  };
  Value word = arith::ShRUIOp::create(b, address, i32(2));
  int64_t rowWords = kRowBytes / 4;
  Value bits =
      load(tiles, {asIndex(arith::DivUIOp::create(b, word, i32(rowWords))),
                   asIndex(arith::RemUIOp::create(b, word, i32(rowWords)))});
  // Bit 1 of the address picks the half.
  Value shift = arith::MulIOp::create(
      b,
      arith::AndIOp::create(b, arith::ShRUIOp::create(b, address, i32(1)),
                            i32(1)),
      i32(16));
  return unpack(arith::ShRUIOp::create(b, bits, shift), /*high=*/false);
}

SmallVector<Value> WgmmaFlashEmitter::emulatedWgmma(const Step &step,
                                                    ArrayRef<Value> acc) {
  const SharedOperand *aShared = step.aShared ? &*step.aShared : nullptr;
  const SharedOperand &bShared = step.bShared;
  auto asI32 = [&](Value v) {
    return arith::IndexCastUIOp::create(b, b.getI32Type(), v).getResult();
  };
  if (!aShared) {
    for (auto [k, w] : llvm::enumerate(step.aWords))
      memref::StoreOp::create(b, w, mmaA, {tid, idx(k)});
    gpu::BarrierOp::create(b);
  }
  // Entry 4j + i of this thread: row 16 w + g (+ 8 for i >= 2), column
  // 8j + 2c + i % 2; one k per iteration.
  int64_t columnTiles = acc.size() / 4;
  auto loop = scf::ForOp::create(
      b, idx(0), idx(16), idx(1), acc,
      [&](OpBuilder &nb, Location loc, Value kIv, ValueRange sums) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value k = asI32(kIv);
        Value a[2];
        for (int r = 0; r < 2; ++r) {
          if (aShared) {
            // Rows of the operand, which starts at the warpgroup's first.
            Value row = asI32(arith::AddIOp::create(
                b, rowInWarpgroup(), arith::AddIOp::create(b, g, idx(8 * r))));
            a[r] = emulatedElement(aShared->tiles,
                                   operandAddress(*aShared, row, k));
            continue;
          }
          // mma.sync's A layout within the warp: (row, k) in lane
          // 4 (row mod 8) + (k mod 8) / 2, word (row >= 8) + 2 (k / 8),
          // half k mod 2.
          Value lane = arith::AddIOp::create(
              b, warpBase,
              arith::AddIOp::create(
                  b, arith::MulIOp::create(b, g, idx(4)),
                  arith::DivUIOp::create(
                      b, arith::RemUIOp::create(b, kIv, idx(8)), idx(2))));
          Value wordIndex = arith::AddIOp::create(
              b, idx(r),
              arith::MulIOp::create(b, arith::DivUIOp::create(b, kIv, idx(8)),
                                    idx(2)));
          Value word = load(mmaA, {lane, wordIndex});
          Value shift = arith::MulIOp::create(
              b, arith::RemUIOp::create(b, k, i32(2)), i32(16));
          a[r] = unpack(arith::ShRUIOp::create(b, word, shift),
                        /*high=*/false);
        }
        SmallVector<Value> out(sums.begin(), sums.end());
        for (int64_t j = 0; j < columnTiles; ++j)
          for (int64_t e = 0; e < 2; ++e) {
            Value col = asI32(arith::AddIOp::create(
                b, arith::MulIOp::create(b, c4, idx(2)), idx(8 * j + e)));
            Value y =
                emulatedElement(bShared.tiles, operandAddress(bShared, col, k));
            for (int r = 0; r < 2; ++r)
              out[4 * j + 2 * r + e] = fma(a[r], y, out[4 * j + 2 * r + e]);
          }
        scf::YieldOp::create(b, out);
      });
  if (!aShared)
    gpu::BarrierOp::create(b);
  return SmallVector<Value>(loop.getResults());
}

SmallVector<SmallVector<Value>> WgmmaFlashEmitter::scoreProducts() {
  // One wgmma per 16 columns of D: Q's columns kc of block kc / 4 start
  // 32 (kc mod 4) bytes into its rows (from the warpgroup's first); so do
  // K's.
  int64_t keyRowsTotal = depth * keyTile;
  Value slotRow = stagedRow(idx(0));
  SmallVector<Step> steps;
  for (int64_t kc = 0; kc < dChunks; ++kc) {
    int64_t block = kc / 4;
    Value within = idx(32 * (kc % 4));
    Step step;
    step.bShared =
        sharedOperand(keyRows,
                      arith::AddIOp::create(
                          b, blockOffset(block, keyRowsTotal, slotRow), within),
                      /*leadingBytes=*/16, kAtomBytes, /*nMajor=*/false);
    if (queryRows)
      step.aShared = sharedOperand(
          queryRows,
          arith::AddIOp::create(b, blockOffset(block, rows, warpgroupRow()),
                                within),
          /*leadingBytes=*/16, kAtomBytes, /*nMajor=*/false);
    else
      step.aWords = qFragments[kc];
    steps.push_back(step);
  }
  SmallVector<Value> acc =
      multiplyAccumulate(steps, SmallVector<Value>(keyTile / 2, f32(0.0f)));
  SmallVector<SmallVector<Value>> s;
  for (int64_t nt = 0; nt < keyTile / 8; ++nt)
    s.push_back(
        SmallVector<Value>(acc.begin() + 4 * nt, acc.begin() + 4 * nt + 4));
  return s;
}

void WgmmaFlashEmitter::accumulateValues(ArrayRef<SmallVector<Value>> p,
                                         SmallVector<SmallVector<Value>> &acc) {
  // One wgmma per 16 keys: A = P's words (the C fragments of two 8-key
  // tiles of S), B = keys 16 kk .. 16 kk + 15 of the staged V rows,
  // N-major: 8-key groups 1024 bytes apart, 64-column blocks one block of
  // the buffer apart.
  int64_t keyRowsTotal = depth * keyTile;
  SmallVector<Step> steps;
  for (int64_t kk = 0; kk < keyTile / 16; ++kk) {
    ArrayRef<Value> s0 = p[2 * kk], s1 = p[2 * kk + 1];
    Step step;
    step.aWords = {packF32(s0[0], s0[1]), packF32(s0[2], s0[3]),
                   packF32(s1[0], s1[1]), packF32(s1[2], s1[3])};
    step.bShared = sharedOperand(
        valueRows, blockOffset(0, keyRowsTotal, stagedRow(idx(16 * kk))),
        /*leadingBytes=*/keyRowsTotal * kRowBytes, kAtomBytes,
        /*nMajor=*/true);
    steps.push_back(step);
  }
  SmallVector<Value> flat;
  for (const SmallVector<Value> &tile : acc)
    flat.append(tile.begin(), tile.end());
  flat = multiplyAccumulate(steps, flat);
  for (auto [v, tile] : llvm::enumerate(acc))
    for (int64_t i = 0; i < 4; ++i)
      tile[i] = flat[4 * v + i];
}

} // namespace

bool mlir::attn::usesWarpgroupMmaKernel(TiledAttention attention,
                                        const KernelPlan &plan,
                                        const TargetDescription &target,
                                        bool emulateWgmma) {
  OnlineAttentionOp op = attention.tile;
  std::shared_ptr<const GpuTargetInfo> api = GpuTargetInfo::get(target);
  if (!api)
    return false;
  bool warpgroupShapes =
      llvm::any_of(target.matrixShapes,
                   [](const std::array<int64_t, 3> &s) { return s[0] == 64; });
  bool available = api->hasNativeMma() ? warpgroupShapes : emulateWgmma;
  auto dimOf = [](Value v) {
    return cast<ShapedType>(v.getType()).getShape().back();
  };
  int64_t headDim = dimOf(op.getQuery()), valueDim = dimOf(op.getValue());
  // The mma.sync kernel's other conditions (16-bit Q, K and V, key tiles
  // of 16); whether the instructions exist was decided above.
  return available &&
         usesMmaKernel(attention, plan, target, /*emulateMma=*/true,
                       F32Mma::None) &&
         headDim % kAtomElements == 0 && valueDim % kAtomElements == 0 &&
         valueDim <= 256 && plan.keyTile <= 256 &&
         plan.queryTiling.tile % 64 == 0;
}

std::unique_ptr<GpuKernelEmitter> mlir::attn::makeWgmmaFlashEmitter(
    func::FuncOp host, TiledAttention attention, const KernelPlan &plan,
    const TargetDescription &target, bool countTiles) {
  return std::make_unique<WgmmaFlashEmitter>(host, attention, plan, target,
                                             countTiles);
}
