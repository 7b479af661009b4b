//===- RunContextParallel.cpp - attn-run --context-parallel ---------------===//
#include "RunContextParallel.h"
#include "attn/Compiler/BlockKernels.h"
#include "attn/Runtime/ContextParallel.h"
#include "llvm/Support/FormatVariadic.h"
#include <cstring>

using namespace attnrt;

std::unique_ptr<Communicator> attnrt::connectRanks(std::string &error) {
#ifdef ATTN_HAVE_MPI
  return createMpiCommunicator(nullptr, nullptr, error);
#else
  error = "this attn-run was built without MPI (install libopenmpi-dev and "
          "reconfigure) : --context-parallel is not available";
  return nullptr;
#endif
}

/// Rows of `chunks` out of [planes, tokens, width] into [planes, rows,
/// width], or back when `toWhole`.
static void copyChunks(const std::vector<TokenChunk> &chunks, int64_t planes,
                       int64_t tokens, int64_t width, const float *from,
                       float *to, bool toWhole) {
  int64_t rows = 0;
  for (const TokenChunk &c : chunks)
    rows += c.length;
  for (int64_t p = 0; p < planes; ++p) {
    int64_t local = 0;
    for (const TokenChunk &c : chunks) {
      const float *src = toWhole ? from + (p * rows + local) * width
                                 : from + (p * tokens + c.start) * width;
      float *dst = toWhole ? to + (p * tokens + c.start) * width
                           : to + (p * rows + local) * width;
      std::memcpy(dst, src, sizeof(float) * c.length * width);
      local += c.length;
    }
  }
}

std::string attnrt::runContextParallel(
    Communicator &comm, const std::string &scheme,
    mlir::attn::AttentionOp attention, unsigned numThreads,
    llvm::function_ref<Operand *(llvm::StringRef)> operandOf,
    std::vector<float> &output) {
  if (scheme != "ring" && scheme != "zigzag" && scheme != "ulysses")
    return "--context-parallel must be ring, zigzag or ulysses";
  if (!operandOf("q") || !operandOf("k") || !operandOf("v"))
    return "--context-parallel needs q, k and v to be arguments of the entry";
  auto shape = [](Operand *operand) { return operand->type.getShape(); };
  llvm::ArrayRef<int64_t> qShape = shape(operandOf("q")),
                          kShape = shape(operandOf("k")),
                          vShape = shape(operandOf("v"));
  AttentionDims dims{qShape[0], qShape[1], kShape[1], qShape[3], vShape[3]};
  int64_t tokens = qShape[2];
  std::vector<int64_t> queryIds, keyIds;
  if (Operand *ids = operandOf("q_segments"))
    queryIds = segmentIds(*ids);
  if (Operand *ids = operandOf("kv_segments"))
    keyIds = segmentIds(*ids);
  const float *relTable =
      operandOf("rel_table") ? operandOf("rel_table")->floats() : nullptr;
  HostCompileOptions options;
  options.numThreads = numThreads;
  auto blocks = CompiledBlockAttention::create(
      attention, options, queryIds.empty() ? nullptr : queryIds.data(),
      keyIds.empty() ? nullptr : keyIds.data(), relTable);
  if (!blocks)
    return llvm::toString(blocks.takeError());
  if (tokens < comm.size())
    return llvm::formatv("{0} tokens cannot be split over {1} ranks", tokens,
                         comm.size());

  // This rank's share of Q, K and V.
  SequenceLayout layout =
      scheme == "zigzag" ? SequenceLayout::Zigzag : SequenceLayout::Contiguous;
  std::vector<TokenChunk> mine =
      rankChunks(layout, tokens, comm.size(), comm.rank());
  int64_t rows = 0;
  for (const TokenChunk &c : mine)
    rows += c.length;
  const int64_t B = dims.batch, Hq = dims.queryHeads, Hkv = dims.keyHeads;
  std::vector<float> q(B * Hq * rows * dims.headDim),
      k(B * Hkv * rows * dims.headDim), v(B * Hkv * rows * dims.valueDim),
      o(B * Hq * rows * dims.valueDim);
  copyChunks(mine, B * Hq, tokens, dims.headDim, operandOf("q")->floats(),
             q.data(), false);
  copyChunks(mine, B * Hkv, tokens, dims.headDim, operandOf("k")->floats(),
             k.data(), false);
  copyChunks(mine, B * Hkv, tokens, dims.valueDim, operandOf("v")->floats(),
             v.data(), false);

  ContextParallelStats stats;
  std::string error;
  bool ok =
      scheme == "ulysses"
          ? ulyssesAttention(comm, layout, tokens, dims, **blocks, q.data(),
                             k.data(), v.data(), o.data(), stats, error)
          : ringAttention(comm, layout, tokens, dims, **blocks, q.data(),
                          k.data(), v.data(), o.data(), stats, error);
  if (!ok)
    return llvm::formatv("rank {0}: {1}", comm.rank(), error);

  // Each rank's line, printed by rank 0 in rank order.
  std::string rowsText, fromText;
  for (const TokenChunk &c : mine)
    rowsText += llvm::formatv("{0}[{1}, {2})", rowsText.empty() ? "" : " + ",
                              c.start, c.end());
  for (int s : stats.blocksFrom)
    fromText += (fromText.empty() ? "" : ", ") + std::to_string(s);
  std::string line = llvm::formatv(
      "rank {0}/{1} {2}: rows {3}; K/V blocks from ranks [{4}] ({5} "
      "received); {6} bytes sent; {7} K/V bytes held; {8} block pairs "
      "computed, {9} skipped; {10} kernels compiled",
      comm.rank(), comm.size(), scheme, rowsText, fromText,
      stats.blocksFrom.size(), stats.bytesSent, stats.peakKeyValueBytes,
      stats.blocksComputed, stats.blocksSkipped, (*blocks)->kernelsCompiled());
  constexpr size_t kLine = 512;
  line.resize(kLine, '\0');
  std::vector<char> lines(kLine * comm.size());
  if (!comm.allGather(line.data(), lines.data(), kLine, error))
    return error;

  // The whole output on every rank (shares padded to the longest).
  int64_t maxRows = 0;
  for (int s = 0; s < comm.size(); ++s) {
    int64_t n = 0;
    for (const TokenChunk &c : rankChunks(layout, tokens, comm.size(), s))
      n += c.length;
    maxRows = std::max(maxRows, n);
  }
  int64_t share = B * Hq * maxRows * dims.valueDim;
  std::vector<float> padded(share, 0.0f), all(share * comm.size());
  std::memcpy(padded.data(), o.data(), sizeof(float) * o.size());
  if (!comm.allGather(padded.data(), all.data(), sizeof(float) * share, error))
    return error;
  if (comm.rank() != 0)
    return "";
  for (int s = 0; s < comm.size(); ++s)
    llvm::outs() << (lines.data() + s * kLine) << "\n";
  output.assign(B * Hq * tokens * dims.valueDim, 0.0f);
  for (int s = 0; s < comm.size(); ++s)
    copyChunks(rankChunks(layout, tokens, comm.size(), s), B * Hq, tokens,
               dims.valueDim, all.data() + s * share, output.data(), true);
  return "";
}
