//===- CompileForTest.h - JIT-compiled attn IR and random inputs ---------===//
//
// What the unit tests that execute attn IR share: parse a module from
// text, lower and JIT-compile it for this CPU, and seeded N(0, 1) inputs.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TEST_UNITTESTS_COMPILEFORTEST_H
#define ATTN_TEST_UNITTESTS_COMPILEFORTEST_H

#include "attn/Compiler/HostCompiler.h"
#include "attn/Spec/Spec.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include <random>
#include <vector>

namespace attntest {

/// `source` (attn IR) compiled by attn-cpu-pipeline into a JIT kernel.
inline llvm::Expected<std::unique_ptr<attnrt::Kernel>>
compileForTest(llvm::StringRef source,
               const attnrt::HostCompileOptions &options = {}) {
  mlir::DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  mlir::MLIRContext context(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return llvm::createStringError("the test module does not parse");
  auto kernel = attnrt::compileForHost(*module, options);
  if (!kernel)
    return kernel.takeError();
  return std::unique_ptr<attnrt::Kernel>(std::move(*kernel));
}

/// Seeded N(0, 1) floats, `n` at a time.
class NormalFloats {
public:
  explicit NormalFloats(unsigned seed) : rng(seed) {}
  std::vector<float> operator()(int64_t n) {
    std::vector<float> x(n);
    for (float &e : x)
      e = normal(rng);
    return x;
  }

private:
  std::mt19937 rng;
  std::normal_distribution<float> normal;
};

} // namespace attntest

#endif // ATTN_TEST_UNITTESTS_COMPILEFORTEST_H
