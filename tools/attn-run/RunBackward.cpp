//===- RunBackward.cpp - attn-run --backward ------------------------------===//
#include "RunBackward.h"
#include "ProblemFromIR.h"
#include "ScoreRegionProgram.h"
#include "TileStats.h"
#include "attn/Compiler/TileCounters.h"
#include "attn/Tooling/Reference.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include <cmath>

using namespace mlir;

namespace attnrt {

namespace {

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-run") << message << "\n";
  return EXIT_FAILURE;
}

/// The default --tolerance, scaled by each gradient's largest entry. f32:
/// errors seen ~1e-6 (sums over up to 4 x 1000 rows); 1e-4 leaves 100x.
/// f16 / bf16: the kernel reads 16-bit Q, K, V, dO and the forward's
/// 16-bit output O (so D = rowsum(dO o O) carries O's rounding) and rounds
/// each gradient once; 8 units of the format's rounding (2^-11 f16, 2^-8
/// bf16) bound those few roundings with room, and a wrong term is off by
/// far more.
double defaultTolerance(Type element) {
  if (element.isF16())
    return 8 * std::ldexp(1.0, -11);
  if (element.isBF16())
    return 8 * std::ldexp(1.0, -8);
  return 1e-4;
}

/// The entry made to return (dQ, dK, dV[, dBias]) of `forward` for a new
/// last argument dO; the forward gains its lse result when it has none.
/// Returns the backward op, or null after reporting at the op why not.
attn::AttentionGradOp appendBackward(func::FuncOp entry,
                                     attn::AttentionOp forward,
                                     bool operandGrads) {
  OpBuilder b(forward);
  Location loc = forward.getLoc();
  auto outType = cast<RankedTensorType>(forward.getOutput().getType());
  BlockArgument dO = entry.front().addArgument(outType, loc);
  Value lse = forward.getLse();
  if (!lse) {
    auto lseType =
        RankedTensorType::get(outType.getShape().drop_back(), b.getF32Type());
    auto withLse = attn::AttentionOp::create(
        b, loc, outType, lseType, forward.getQuery(), forward.getKey(),
        forward.getValue(), forward.getMask(), forward.getBias(),
        forward.getQSegments(), forward.getKvSegments(), forward.getRelTable(),
        forward.getPatternAttr(), forward.getScaleAttr(),
        forward.getAlignAttr(), forward.getModsAttr(),
        forward.getQueryOffsetAttr(), forward.getKeyOffsetAttr());
    withLse.getScore().takeBody(forward.getScore());
    forward.getOutput().replaceAllUsesWith(withLse.getOutput());
    forward.erase();
    forward = withLse;
    lse = forward.getLse();
  }
  b.setInsertionPointAfter(forward);
  // The bias and rel_table operands and the score region's captured
  // tensors get their gradients too.
  SmallVector<Type> gradTypes = {forward.getQuery().getType(),
                                 forward.getKey().getType(),
                                 forward.getValue().getType()};
  SmallVector<Value> differentiable = {forward.getBias(),
                                       forward.getRelTable()};
  llvm::append_range(differentiable,
                     attn::capturedFloatTensors(forward.getScore()));
  for (Value operand : differentiable)
    if (operand && operandGrads)
      gradTypes.push_back(operand.getType());
  auto grad = attn::AttentionGradOp::create(
      b, loc, gradTypes, forward.getQuery(), forward.getKey(),
      forward.getValue(), forward.getOutput(), dO, lse, forward.getMask(),
      forward.getBias(), forward.getQSegments(), forward.getKvSegments(),
      forward.getRelTable(), forward.getPatternAttr(), forward.getScaleAttr(),
      forward.getAlignAttr(), forward.getModsAttr(),
      forward.getQueryOffsetAttr(), forward.getKeyOffsetAttr());
  IRMapping mapping;
  forward.getScore().cloneInto(&grad.getScore(), mapping);
  Operation *ret = entry.front().getTerminator();
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret->getLoc(), grad.getResults());
  ret->erase();
  entry.setType(b.getFunctionType(entry.front().getArgumentTypes(),
                                  grad.getResultTypes()));
  return grad;
}

/// O (its bits, in its element type) and lse of the forward.
struct ForwardResults {
  std::vector<uint32_t> outputWords, lseWords;
  MemRefDescriptor output, lse;
};

/// Runs the forward of `grad` (the entry's attn.attention) on this host
/// for the call's `args` into `results`, then makes `entry` the backward
/// alone, with O and lse as its last two arguments. "" or the message.
std::string runForwardOnHost(ModuleOp module, func::FuncOp entry,
                             attn::AttentionGradOp grad, const BackwardRun &run,
                             ArrayRef<MemRefDescriptor *> args,
                             ForwardResults &results) {
  auto outType = cast<RankedTensorType>(grad.getOutput().getType());
  auto lseType = cast<RankedTensorType>(grad.getLse().getType());
  // The forward alone: a copy of the module whose entry returns O and lse.
  OwningOpRef<ModuleOp> forwardModule = module.clone();
  auto forwardEntry =
      forwardModule->lookupSymbol<func::FuncOp>(entry.getSymName());
  Operation *ret = forwardEntry.front().getTerminator();
  attn::AttentionGradOp copy;
  forwardEntry.walk([&](attn::AttentionGradOp op) { copy = op; });
  OpBuilder b(ret);
  func::ReturnOp::create(b, ret->getLoc(),
                         ValueRange{copy.getOutput(), copy.getLse()});
  ret->erase();
  copy.erase();
  forwardEntry.setType(b.getFunctionType(
      forwardEntry.front().getArgumentTypes(), {outType, lseType}));
  auto hostKernel = run.buildHostKernel(*forwardModule);
  if (!hostKernel)
    return llvm::toString(hostKernel.takeError());

  // 16-bit outputs take half of each word.
  int64_t outWords = outType.getElementType().isF32()
                         ? outType.getNumElements()
                         : (outType.getNumElements() + 1) / 2;
  results.outputWords.resize(outWords);
  results.lseWords.resize(lseType.getNumElements());
  results.output =
      MemRefDescriptor(results.outputWords.data(), outType.getShape().vec());
  results.lse =
      MemRefDescriptor(results.lseWords.data(), lseType.getShape().vec());
  std::vector<MemRefDescriptor *> forwardArgs(args.begin(), args.end());
  forwardArgs.push_back(&results.output);
  forwardArgs.push_back(&results.lse);
  if (llvm::Error error =
          (*hostKernel)->call(entry.getSymName().str(), forwardArgs))
    return llvm::toString(std::move(error));

  // The backward alone.
  Block &body = entry.front();
  Operation *forward = grad.getOutput().getDefiningOp();
  grad.getOutputMutable().assign(body.addArgument(outType, grad.getLoc()));
  grad.getLseMutable().assign(body.addArgument(lseType, grad.getLoc()));
  forward->erase();
  entry.setType(
      b.getFunctionType(body.getArgumentTypes(), entry.getResultTypes()));
  return "";
}

} // namespace

int runBackward(ModuleOp module, func::FuncOp entry, attn::AttentionOp forward,
                const BackwardRun &run) {
  // The reference problem is read before the rewrite and the lowering.
  FailureOr<reference::AttentionProblem> problem =
      run.check || run.stats ? problemFromAttention(forward)
                             : FailureOr<reference::AttentionProblem>(
                                   reference::AttentionProblem());
  if (failed(problem))
    return EXIT_FAILURE;
  RoleList roles = attentionRoles(forward);
  attn::AttentionGradOp grad = appendBackward(entry, forward, run.operandGrads);
  if (!grad)
    return EXIT_FAILURE;
  roles.push_back({grad.getOutputGrad(), "grad_output"});

  std::list<Operand> operands;
  std::map<std::string, unsigned> roleArgs;
  auto queryType = cast<RankedTensorType>(grad.getQuery().getType());
  if (std::string message =
          run.prepareOperands(entry, queryType, roles, operands, roleArgs);
      !message.empty())
    return fail(message);
  auto operandOf = [&](llvm::StringRef role) {
    return attnrt::operandForRole(operands, roleArgs, role.str());
  };
  if (run.check)
    for (const auto &[value, role] : roles)
      if (value && !operandOf(role))
        return fail("--backward --check needs " + role +
                    " to be an argument of @" + entry.getSymName());

  std::string symbol = entry.getSymName().str();
  SmallVector<RankedTensorType> resultTypes;
  for (Type type : grad.getResultTypes())
    resultTypes.push_back(cast<RankedTensorType>(type));
  std::vector<MemRefDescriptor *> args;
  for (Operand &operand : operands)
    args.push_back(&operand.descriptor);
  // On a device: O and lse from this host's forward become arguments of
  // the backward.
  ForwardResults forwardResults;
  if (run.onDevice) {
    if (std::string message =
            runForwardOnHost(module, entry, grad, run, args, forwardResults);
        !message.empty())
      return fail(message);
    args.push_back(&forwardResults.output);
    args.push_back(&forwardResults.lse);
  }
  auto kernel = run.buildKernel(module);
  if (!kernel)
    return fail(llvm::toString(kernel.takeError()));
  // 16-bit gradients land in their own buffers and are widened after.
  std::vector<std::vector<float>> results;
  std::vector<std::vector<uint16_t>> narrow;
  std::vector<MemRefDescriptor> outs;
  for (RankedTensorType type : resultTypes) {
    results.emplace_back(type.getNumElements());
    narrow.emplace_back(type.getElementType().isF32() ? 0
                                                      : type.getNumElements());
  }
  for (auto [type, result, bits] : llvm::zip(resultTypes, results, narrow))
    outs.emplace_back(bits.empty() ? static_cast<void *>(result.data())
                                   : static_cast<void *>(bits.data()),
                      type.getShape().vec());
  for (MemRefDescriptor &out : outs)
    args.push_back(&out);
  resetTileCounts();
  if (llvm::Error error = (*kernel)->call(symbol, args))
    return fail(llvm::toString(std::move(error)));
  for (auto [type, result, bits] : llvm::zip(resultTypes, results, narrow))
    for (size_t e = 0; e < bits.size(); ++e)
      result[e] = fromBits(floatFormatOf(type.getElementType()), bits[e]);

  reference::AttentionProblem &pb = *problem;
  pb.query = operandOf("q")->floats();
  pb.key = operandOf("k")->floats();
  pb.value = operandOf("v")->floats();
  if (Operand *mask = operandOf("mask"))
    pb.mask = mask->as<uint8_t>();
  if (Operand *bias = operandOf("bias"))
    pb.bias = bias->floats();
  if (Operand *table = operandOf("rel_table"))
    pb.relTable = table->floats();
  bindCapturedData(
      pb, [&](llvm::StringRef role) { return operandOf(role)->floats(); });
  std::vector<int64_t> qIds, kvIds;
  if (Operand *q = operandOf("q_segments")) {
    qIds = segmentIds(*q);
    kvIds = segmentIds(*operandOf("kv_segments"));
    pb.qSegments = qIds.data();
    pb.kvSegments = kvIds.data();
  }
  if (run.stats) {
    // The forward's kernel (its own tiling), then the backward's passes.
    TileCounts counts = readTileCounts();
    printTileStats(counts, pb);
    printBackwardTileStats(counts, pb);
  }
  if (!run.check)
    return EXIT_SUCCESS;
  reference::Gradients expected =
      reference::attentionGradients(pb, operandOf("grad_output")->floats());
  if (run.perturb) {
    float largest = 0;
    for (float x : results[0])
      largest = std::max(largest, std::abs(x));
    results[0][0] = std::isnan(*run.perturb)
                        ? NAN
                        : results[0][0] + float(*run.perturb) * largest;
  }
  double bar =
      run.tolerance.value_or(defaultTolerance(queryType.getElementType()));
  bool pass = true;
  std::vector<std::pair<const char *, const std::vector<double> *>> refs = {
      {"dq", &expected.query}, {"dk", &expected.key}, {"dv", &expected.value}};
  if (pb.bias && run.operandGrads)
    refs.push_back({"dbias", &expected.bias});
  if (pb.relTable && run.operandGrads)
    refs.push_back({"drel_table", &expected.relTable});
  std::vector<std::string> capturedNames;
  for (size_t n = 0; n < expected.captured.size(); ++n)
    capturedNames.push_back("d" + capturedRole(n));
  for (size_t n = 0; run.operandGrads && n < expected.captured.size(); ++n)
    refs.push_back({capturedNames[n].c_str(), &expected.captured[n]});
  for (size_t r = 0; r < results.size(); ++r) {
    auto [name, ref] = refs[r];
    reference::Comparison c = reference::compare(results[r], *ref, ref->size());
    bool ok = c.passes(bar);
    llvm::outs() << llvm::formatv(
        "check {0}: max abs error {1:e2}, scale {2:e2}, scaled error {3:e2} "
        "(tolerance {4:e1}){5}: {6}\n",
        name, c.maxError, c.scale, c.scaledError(), bar,
        c.mismatches
            ? llvm::formatv(", {0} NON-FINITE MISMATCHES", c.mismatches).str()
            : std::string(),
        ok ? "PASS" : "FAIL");
    pass &= ok;
  }
  return pass ? EXIT_SUCCESS : EXIT_FAILURE;
}

} // namespace attnrt
