//===- CheckEntry.cpp - the entry attn-run runs and its check -------------===//
#include "CheckEntry.h"
#include "RunOptions.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/WithColor.h"
#include <cmath>
#include <cstring>

using namespace mlir;
using attnrt::attentionRoles;
using attnrt::Operand;
using attnrt::RoleList;

namespace attnrun {

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-run") << message << "\n";
  return EXIT_FAILURE;
}

/// The entry function (--entry, or the first public one) and its checked
/// op; an error message when there is none or --check has none to check.
std::string findEntry(ModuleOp module, func::FuncOp &entry,
                      CheckedOp &checked) {
  module->walk([&](func::FuncOp f) {
    if (entry || f.isExternal())
      return;
    if (entryName.empty() ? f.isPublic() : f.getSymName() == entryName)
      entry = f;
  });
  if (!entry)
    return entryName.empty() ? "no public function to run"
                             : "no function named '" + entryName + "'";
  int numAttention = 0;
  entry.walk([&](Operation *op) {
    if (auto a = dyn_cast<attn::AttentionOp>(op)) {
      checked.attention = a;
      ++numAttention;
    } else if (auto described = attnrt::describeEfficientOp(op)) {
      checked.efficient = std::move(described);
      ++numAttention;
    }
  });
  if (check && numAttention != 1)
    return ("--check needs exactly one attention op (attn.attention, or "
            "attn.linformer, attn.nystrom, attn.kernelized or "
            "attn.fourier_mix with static shapes) in @" +
            entry.getSymName() + ", found " + llvm::Twine(numAttention))
        .str();
  if (numAttention != 1)
    checked = CheckedOp();
  checked.roles = checked.attention   ? attentionRoles(checked.attention)
                  : checked.efficient ? checked.efficient->roles
                                      : RoleList();
  return "";
}

/// --check: the f64 reference of the checked op on the same operands,
/// compared with `result`. Returns the exit status.
int checkResult(const CheckedOp &checked,
                std::optional<attnrt::reference::AttentionProblem> problem,
                llvm::function_ref<Operand *(llvm::StringRef)> operandOf,
                llvm::StringRef entrySymbol, std::vector<float> &result,
                attnrt::FloatFormat resultFormat,
                const std::vector<float> *lse) {
  std::vector<double> expected, expectedLse;
  if (lse && !checked.attention)
    return fail("--check of an lse result needs attn.attention in @" +
                entrySymbol);
  if (checked.efficient) {
    for (const auto &[value, role] : checked.efficient->roles)
      if (!operandOf(role))
        return fail("--check needs " + role + " to be an argument of @" +
                    entrySymbol);
    expected = checked.efficient->reference(
        [&](llvm::StringRef role) -> const float * {
          Operand *operand = operandOf(role);
          return operand ? operand->floats() : nullptr;
        });
  } else {
    if (!operandOf("q") || !operandOf("k") || !operandOf("v"))
      return fail("--check needs q, k and v to be arguments of @" +
                  entrySymbol);
    // A mask or bias computed inside the function is not what the
    // reference would read: refuse rather than compare against other data.
    for (const auto &[value, role] : checked.roles)
      if (value && !operandOf(role))
        return fail("--check needs " + role + " to be an argument of @" +
                    entrySymbol);
    problem->query = operandOf("q")->floats();
    problem->key = operandOf("k")->floats();
    problem->value = operandOf("v")->floats();
    if (Operand *mask = operandOf("mask"))
      problem->mask = mask->as<uint8_t>();
    if (Operand *bias = operandOf("bias"))
      problem->bias = bias->floats();
    if (Operand *table = operandOf("rel_table"))
      problem->relTable = table->floats();
    attnrt::bindCapturedData(*problem, [&](llvm::StringRef role) {
      return operandOf(role)->floats();
    });
    expected =
        attnrt::reference::attention(*problem, lse ? &expectedLse : nullptr);
  }

  // 16-bit results: the bar is twice the error of the naive attention
  // computed in that type (S, P and O rounded), on the same inputs. TF32
  // products (--gpu-tf32): the naive attention with Q, K and V rounded to
  // TF32 and S, P and O to f16, whose 10-bit mantissa TF32 shares.
  double bar = tolerance;
  std::string barSource;
  bool tf32Products = tf32 && resultFormat == attnrt::FloatFormat::F32;
  if ((resultFormat != attnrt::FloatFormat::F32 || tf32Products) && problem &&
      !tolerance.getNumOccurrences()) {
    attnrt::reference::AttentionProblem naive = *problem;
    naive.computeIn = tf32Products ? attnrt::FloatFormat::F16 : resultFormat;
    // Copies of Q, K and V with each magnitude rounded to 10 mantissa
    // bits, halves away from 0 (cvt.rna.tf32.f32).
    std::vector<float> rounded[3];
    if (tf32Products) {
      const float **operands[3] = {&naive.query, &naive.key, &naive.value};
      int64_t sizes[3] = {
          naive.batch * naive.queryHeads * naive.queryLen * naive.headDim,
          naive.batch * naive.keyHeads * naive.keyLen * naive.headDim,
          naive.batch * naive.keyHeads * naive.keyLen * naive.valueDim};
      for (int k = 0; k < 3; ++k) {
        rounded[k].assign(*operands[k], *operands[k] + sizes[k]);
        for (float &x : rounded[k]) {
          uint32_t bits;
          std::memcpy(&bits, &x, sizeof bits);
          bits = (bits + 0x1000u) & 0xffffe000u;
          std::memcpy(&x, &bits, sizeof bits);
        }
        *operands[k] = rounded[k].data();
      }
    }
    std::vector<double> naiveOut = attnrt::reference::attention(naive);
    std::vector<float> naiveFloats(naiveOut.begin(), naiveOut.end());
    double naiveError =
        attnrt::reference::compare(naiveFloats, expected, expected.size())
            .scaledError();
    bar = 2 * naiveError;
    const char *type = tf32Products                               ? "tf32"
                       : resultFormat == attnrt::FloatFormat::F16 ? "f16"
                                                                  : "bf16";
    barSource = llvm::formatv(" = 2 x the naive {0} attention's {1:e2}", type,
                              naiveError)
                    .str();
  }

  if (std::optional<double> amount = perturbAmount()) {
    float largest = 0;
    for (float x : result)
      largest = std::max(largest, std::abs(x));
    result[0] =
        std::isnan(*amount) ? NAN : result[0] + float(*amount) * largest;
  }
  // Errors are judged relative to the output's magnitude (absolute when the
  // output is all zeros, e.g. every row masked); a non-finite value where
  // the reference has none (or another one) fails.
  auto judge = [&](llvm::StringRef what, const std::vector<float> &out,
                   const std::vector<double> &ref) {
    attnrt::reference::Comparison c =
        attnrt::reference::compare(out, ref, ref.size());
    bool pass = c.passes(bar);
    llvm::outs() << llvm::formatv(
        "check{0}: max abs error {1:e2}, {2} scale {3:e2}, scaled error "
        "{4:e2} (tolerance {5:e1}{6}){7}: {8}\n",
        what.empty() ? "" : " " + what.str(), c.maxError,
        what.empty() ? "output" : what, c.scale, c.scaledError(), bar,
        barSource,
        c.mismatches
            ? llvm::formatv(", {0} NON-FINITE MISMATCHES", c.mismatches).str()
        : c.finitePairs == 0 && c.values > 0 ? ", NO FINITE VALUE"
                                             : "",
        pass ? "PASS" : "FAIL");
    return pass;
  };
  bool pass = judge("", result, expected);
  // The log-sum-exp is judged like the output, scaled by max |lse| (f32
  // rounding of m + log l is ~1e-7 of it); -inf rows must match.
  if (lse)
    pass = judge("lse", *lse, expectedLse) && pass;
  return pass ? EXIT_SUCCESS : EXIT_FAILURE;
}

/// The reference problem of the checked attention op and its FLOPs (2 per
/// multiply-add in Q K^T and P V, halved when causal), read from the IR
/// before lowering erases the op. False when --check or --stats need it
/// and it cannot be had (the error is reported at the op).
bool describeProblem(
    const CheckedOp &checked,
    std::optional<attnrt::reference::AttentionProblem> &problem,
    double &flops) {
  flops = checked.efficient ? checked.efficient->flops : 0;
  if (!checked.attention || !(check || stats || repeat > 0))
    return true;
  FailureOr<attnrt::reference::AttentionProblem> pb =
      attnrt::problemFromAttention(checked.attention);
  if (failed(pb))
    return !(check || stats);
  problem = *pb;
  flops = 2.0 * problem->batch * problem->queryHeads * problem->queryLen *
          problem->keyLen * double(problem->headDim + problem->valueDim);
  if (problem->pattern &&
      problem->pattern->kind == attnrt::reference::Pattern::Kind::Causal)
    flops /= 2; // the usual convention for causal attention
  return true;
}

} // namespace attnrun
