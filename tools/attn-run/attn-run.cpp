//===- attn-run.cpp - compile, run and check attention kernels ------------===//
//
//   attn-run INPUT.{mlir,yaml} [--entry=NAME] [--input ROLE=FILE.npy]...
//            [--output=FILE.npy] [--seed=N] [--check] [--tolerance=X]
//            [--repeat=N] [--num-threads=N] [--load=LIB.so] [--stats]
//
// Compiles the entry function with attn-cpu-pipeline, JIT-runs it on inputs
// read from .npy files or generated from the seed, and optionally compares
// the result with the double-precision reference. Operands are named by
// their role in the function's attention op: q, k, v, mask, bias,
// q_segments, kv_segments, rel_table (attn.attention); e_proj, f_proj
// (attn.linformer); omega (attn.kernelized); x (attn.fourier_mix).
//
//===----------------------------------------------------------------------===//
#include "../ToolOptions.h"
#include "CheckEntry.h"
#include "EfficientOps.h"
#include "Operands.h"
#include "ProblemFromIR.h"
#include "RunBackward.h"
#include "RunContextParallel.h"
#include "RunLayers.h"
#include "RunOptions.h"
#include "TileStats.h"
#include "attn/Compiler/GpuCompiler.h"
#include "attn/Compiler/HostCompiler.h"
#include "attn/Compiler/TileCounters.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/TileSchedule.h"
#include "attn/Runtime/InputLimits.h"
#include "attn/Runtime/RandomFeatures.h"
#include "attn/Spec/LayerSpec.h"
#include "attn/Spec/Spec.h"
#include "attn/Tooling/HostTensor.h"
#include "attn/Tooling/Npy.h"
#include "attn/Tooling/Reference.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <list>
#include <map>
#include <random>
#include <set>

using namespace mlir;
using attnrt::Operand;
namespace cl = llvm::cl;

using namespace attnrun;

using attnrt::attentionRoles;
using attnrt::RoleList;

/// Role of an entry argument from its use in the checked op.
static std::string roleOf(BlockArgument arg, const RoleList &roles) {
  for (const auto &[value, role] : roles)
    if (value == arg)
      return role;
  return "arg" + std::to_string(arg.getArgNumber());
}

/// attn-run on a layer spec: the options in RunLayers' terms.
static int runLayerSpec(llvm::SourceMgr &sourceMgr) {
  // Options of single attention problems: a layer spec would ignore them
  // (docs/Hardening.md: options the chosen path ignores are errors).
  for (const cl::Option *option : std::initializer_list<const cl::Option *>{
           &loadLibrary, &entryName, &generic, &queryTile, &keyTile,
           &cpuKeyTile, &randomInputs, &gaussianOmega})
    if (option->getNumOccurrences())
      return fail("--" + option->ArgStr.str() +
                  " applies to attention specs and IR, not to layer specs "
                  "(attn-compile LAYER.yaml --emit=so builds a layer "
                  "artifact; the C API's attn_stack_* runs it)");
  attnrt::LayerRunOptions options;
  options.weights = weightsFile;
  options.writeRandomWeights = writeWeights;
  options.memory = memoryFile;
  for (llvm::StringRef entry : inputArrays) {
    auto [role, path] = entry.split('=');
    if (path.empty())
      std::tie(role, path) = std::make_pair(llvm::StringRef("x"), entry);
    if (role == "x")
      options.input = path.str();
    else if (role == "memory")
      options.memory = path.str();
    else
      return fail("a layer spec takes --input [x=]FILE.npy and "
                  "memory=FILE.npy, not '" +
                  role + "'");
  }
  options.output = outputFile;
  options.batch = genBatch;
  options.length = genLength;
  options.memoryLength = genMemory;
  options.decodeSteps = decodeSteps;
  options.seed = seed;
  options.check = check;
  options.progress = progress;
  // f32 layers against the f64 reference: see docs/Transformer.md.
  options.tolerance = tolerance;
  options.toleranceGiven = tolerance.getNumOccurrences() > 0;
  options.perturb = perturbAmount();
  options.allowNonFinite = allowNonFinite;
  options.lengths.assign(packedLengths.begin(), packedLengths.end());
  if (!options.lengths.empty() &&
      (genBatch.getNumOccurrences() || genLength.getNumOccurrences()))
    return fail("--lengths gives the packed sequences: no --batch or "
                "--length");
  options.allowUnusedWeights = allowUnusedWeights;
  options.padded = paddedLengths;
  if (paddedLengths && options.lengths.empty())
    return fail("--padded pads the sequences of --lengths: give --lengths");
  if (std::string message = attnrt::parseServeTrace(serve, options.serve);
      !message.empty())
    return fail("--serve: " + message);
  if (options.serve.sequences &&
      (!options.lengths.empty() || decodeSteps || repeat ||
       !contextParallel.empty() || tensorParallel ||
       genBatch.getNumOccurrences() || genLength.getNumOccurrences()))
    return fail("--serve replays its own trace: no --lengths, --decode-steps, "
                "--repeat, --batch, --length or parallel runs");
  options.repeat = repeat;
  options.numThreads = threads;
  if (std::string message = checkDeviceOptions(); !message.empty())
    return fail(message);
  if (device != "cpu") {
    options.gpuTarget = effectiveGpuTarget();
    // A layer's attention is f32: the emulated mma (the tensor-core
    // kernel's) takes it only with TF32 or 3xTF32 products.
    if (emulateMma && !tf32 && !tf32x3)
      return fail("--gpu-emulate-mma on a layer spec needs --gpu-tf32 or "
                  "--gpu-3xtf32 (a layer's attention is f32)");
    if (emulateWgmma)
      return fail("--gpu-emulate-wgmma applies to f16 / bf16 attention; a "
                  "layer's attention is f32");
    options.gpuCompile.emulateMma = emulateMma;
    options.gpuCompile.workgroupRows = gpuWorkgroupRows;
    options.gpuCompile.tf32 = tf32;
    options.gpuCompile.tf32x3 = tf32x3;
  }
  if (options.batch < 1 || options.length < 1 || options.memoryLength < 0 ||
      options.decodeSteps < 0)
    return fail("--batch and --length must be >= 1, --memory-length and "
                "--decode-steps >= 0");
  options.contextParallel = contextParallel;
  options.tensorParallel = tensorParallel;
  std::string linear = linearBackend;
  if (linear.empty())
    linear = device != "cpu" ? "device" : "attn";
  if (linear != "attn" && linear != "openblas" && linear != "device")
    return fail("--linear must be attn, openblas or device, not '" + linear +
                "'");
  if (linear == "device" && device == "cpu")
    return fail("--linear=device runs the products on the GPU of --device: "
                "give --device=vulkan or cuda");
  options.compiledLinears = linear != "openblas";
  options.gpuLinears = linear == "device";
  options.gpuChains = gpuChains;
  options.bf16Products = bf16Products;
  options.openblasAsked =
      linearBackend.getNumOccurrences() && linearBackend == "openblas";
  return attnrt::runLayerSpec(sourceMgr, options);
}

/// The entry's operands (`operands`, one per argument, in order): generated
/// from the seed, then those --input names read from .npy in their own type.
/// `roleArgs` maps each role of the checked op to the argument feeding it.
/// "" on success, else the message.
static std::string prepareOperands(func::FuncOp entry,
                                   RankedTensorType resultType,
                                   const RoleList &roles,
                                   std::list<Operand> &operands,
                                   std::map<std::string, unsigned> &roleArgs) {
  // Every role of the attention op -> the entry argument feeding it (one
  // argument may feed several roles, as in self-attention `%x, %x, %x`).
  for (const auto &[value, role] : roles)
    if (auto arg = dyn_cast_or_null<BlockArgument>(value))
      if (arg.getOwner() == &entry.front())
        roleArgs[role] = arg.getArgNumber();
  // Operands, the result and (with --check) the f64 reference must fit in
  // this machine's memory: refuse up front instead of failing mid-way.
  double needed = double(resultType.getNumElements()) * (check ? 12 : 8);
  for (Type type : entry.getArgumentTypes())
    if (auto tensor = dyn_cast<RankedTensorType>(type);
        tensor && tensor.hasStaticShape())
      needed += double(tensor.getNumElements()) *
                double(attnrt::elementBytes(tensor.getElementType()));
  if (int64_t memory = attnrt::physicalMemoryBytes();
      memory && needed > double(memory))
    return llvm::formatv("@{0} needs {1:F1} GB of buffers, this machine has "
                         "{2:F1} GB",
                         entry.getSymName(), needed * 1e-9,
                         double(memory) * 1e-9)
        .str();
  for (BlockArgument arg : entry.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape() ||
        !attnrt::elementBytes(type.getElementType()))
      return llvm::Twine(
                 "argument #" + llvm::Twine(arg.getArgNumber()) +
                 " must be a statically shaped tensor of f32, f16, bf16, i1, "
                 "i32 or i64")
          .str();
    operands.emplace_back(roleOf(arg, roles), type,
                          attnrt::elementBytes(type.getElementType()));
    attnrt::generate(operands.back(), seed * 1000003 + arg.getArgNumber(),
                     gaussianOmega);
  }
  std::set<Operand *> given;
  for (const std::string &spec : inputArrays) {
    std::pair<llvm::StringRef, llvm::StringRef> split =
        llvm::StringRef(spec).split('=');
    llvm::StringRef role = split.first, path = split.second;
    auto it =
        llvm::find_if(operands, [&](Operand &o) { return o.role == role; });
    if (auto arg = roleArgs.find(role.str()); arg != roleArgs.end())
      it = std::next(operands.begin(), arg->second);
    if (path.empty() || it == operands.end())
      return llvm::Twine("--input " + spec +
                         ": expected ROLE=FILE.npy with ROLE "
                         "one of the function's operands")
          .str();
    llvm::Expected<attnrt::NpyArray> array =
        attnrt::readNpy(path, /*f32Only=*/false);
    if (!array)
      return llvm::Twine(llvm::toString(array.takeError())).str();
    if (llvm::ArrayRef<int64_t>(array->shape) != it->type.getShape())
      return llvm::Twine(path + ": shape does not match operand '" + role +
                         "' of type " + llvm::formatv("{0}", it->type).str())
          .str();
    std::string message = attnrt::copyNpy(*array, *it);
    if (!message.empty())
      return llvm::Twine(path + ": " + message).str();
    given.insert(&*it);
  }
  // Given some inputs, a forgotten one would silently be random data.
  if (!inputArrays.empty() && !randomInputs)
    for (Operand &operand : operands)
      if (!given.count(&operand))
        return llvm::Twine(
                   "operand '" + operand.role +
                   "' was not given with --input (pass --random-inputs to "
                   "generate the missing ones from the seed)")
            .str();
  return "";
}

/// The entry's first result, a static f32 tensor; null after reporting why
/// not. A second result must be the log-sum-exp of its attention: a static
/// f32 [B, Hq, Lq] tensor, set in `lseType`.
static RankedTensorType resultTypeOf(func::FuncOp entry,
                                     RankedTensorType &lseType) {
  if (entry.getNumResults() == 2) {
    lseType = dyn_cast<RankedTensorType>(entry.getResultTypes()[1]);
    if (!lseType || !lseType.hasStaticShape() || lseType.getRank() != 3 ||
        !lseType.getElementType().isF32()) {
      fail("@" + entry.getSymName() +
           "'s second result must be an attention's lse, a statically "
           "shaped f32 [B, Hq, Lq] tensor");
      return {};
    }
  } else if (entry.getNumResults() != 1) {
    fail("@" + entry.getSymName() +
         " must return one tensor (or an attention's output and lse)");
    return {};
  }
  auto type = dyn_cast<RankedTensorType>(entry.getResultTypes()[0]);
  if (!type || !type.hasStaticShape() ||
      !(type.getElementType().isF32() || type.getElementType().isF16() ||
        type.getElementType().isBF16())) {
    fail("@" + entry.getSymName() +
         " must return a statically shaped f32, f16 or bf16 tensor");
    return {};
  }
  return type;
}

static llvm::Expected<std::unique_ptr<attnrt::Kernel>>
buildHostKernel(ModuleOp module);

/// The kernel: --load's library, or the module compiled for --device.
static llvm::Expected<std::unique_ptr<attnrt::Kernel>>
buildKernel(ModuleOp module) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (!loadLibrary.empty())
    return attnrt::SharedLibraryKernel::load(loadLibrary);
  if (device != "cpu") { // checked by checkDeviceOptions
    // The emulated mma is the tensor-core kernel's, which takes 16-bit
    // attention only: on f32 the flag would be ignored.
    bool halfAttention = false;
    if (emulateMma || emulateWgmma)
      module.walk([&](attn::AttentionOp op) {
        Type element =
            cast<ShapedType>(op.getQuery().getType()).getElementType();
        halfAttention |= element.isF16() || element.isBF16() ||
                         ((tf32 || tf32x3) && element.isF32());
      });
    if (emulateMma && !halfAttention)
      return error("--gpu-emulate-mma applies to f16 / bf16 attention, or "
                   "f32 with --gpu-tf32 or --gpu-3xtf32 (the tensor-core "
                   "kernel); this input "
                   "has none");
    if (emulateWgmma && !halfAttention)
      return error("--gpu-emulate-wgmma applies to f16 / bf16 attention (the "
                   "warpgroup kernel); this input has none");
    attnrt::GpuCompileOptions options;
    options.target = effectiveGpuTarget();
    options.countTiles = stats;
    options.emulateMma = emulateMma;
    options.emulateWgmma = emulateWgmma;
    options.workgroupRows = gpuWorkgroupRows;
    options.tf32 = tf32;
    options.tf32x3 = tf32x3;
    auto artifact = attnrt::compileForGpu(module, options);
    if (!artifact)
      return artifact.takeError();
    auto kernel = attnrt::GpuKernel::create(std::move(*artifact));
    if (!kernel)
      return kernel.takeError();
    gpuKernel = kernel->get();
    return std::unique_ptr<attnrt::Kernel>(std::move(*kernel));
  }
  return buildHostKernel(module);
}

/// The module JIT-compiled for this host.
static llvm::Expected<std::unique_ptr<attnrt::Kernel>>
buildHostKernel(ModuleOp module) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
  };
  if (cpuKeyTile < 0 || cpuKeyTile > 1024 || queryTile < 1 ||
      queryTile > 4096 || keyTile < 1 || keyTile > 4096)
    return error("--cpu-kv-tile must be 0 to 1024, --q-tile and --kv-tile "
                 "1 to 4096");
  // Options of the other path would be silently ignored.
  if (generic && cpuKeyTile.getNumOccurrences())
    return error("--cpu-kv-tile applies to the vectorized CPU kernels, not "
                 "to --generic (use --kv-tile)");
  if (!generic &&
      (queryTile.getNumOccurrences() || keyTile.getNumOccurrences()))
    return error("--q-tile and --kv-tile apply to the generic path "
                 "(--generic); the vectorized kernels take --cpu-kv-tile");
  attnrt::HostCompileOptions options;
  options.numThreads = threads;
  options.genericQueryTile = queryTile;
  options.genericKeyTile = keyTile;
  options.cpuKeyTile = cpuKeyTile;
  options.cpuKernels = !generic;
  options.target = cpuTarget;
  options.countTiles = stats;
  options.bf16Products = bf16Products;
  auto jit = attnrt::compileForHost(module, options);
  if (!jit)
    return jit.takeError();
  return std::unique_ptr<attnrt::Kernel>(std::move(*jit));
}

static void printMedian(std::vector<double> milliseconds, double flops,
                        const attnrt::reference::AttentionProblem *problem);

/// Times --repeat runs and prints the median (and the rate when the FLOPs
/// are known).
static llvm::Error
timeRuns(llvm::function_ref<llvm::Error()> runOnce, double flops,
         const attnrt::reference::AttentionProblem *problem) {
  std::vector<double> seconds;
  for (unsigned r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (llvm::Error error = runOnce())
      return error;
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
  }
  std::vector<double> milliseconds;
  for (double s : seconds)
    milliseconds.push_back(s * 1e3);
  printMedian(milliseconds, flops, problem);
  return llvm::Error::success();
}

/// Prints the median of `milliseconds` (and the rate when the FLOPs are
/// known).
static void printMedian(std::vector<double> milliseconds, double flops,
                        const attnrt::reference::AttentionProblem *problem) {
  std::sort(milliseconds.begin(), milliseconds.end());
  double median = milliseconds[milliseconds.size() / 2] * 1e-3;
  llvm::outs() << llvm::formatv("median of {0} runs: {1:f3} ms",
                                milliseconds.size(), median * 1e3);
  // Rates on kept entries need the kept count of the pattern; only dense
  // and causal attention have it in closed form.
  bool sparse =
      problem && problem->pattern &&
      problem->pattern->kind != attnrt::reference::Pattern::Kind::Causal;
  if (flops > 0)
    llvm::outs() << llvm::formatv(
        ", {0:f2} GFLOP/s{1}", flops / median * 1e-9,
        sparse ? " dense-equivalent (the pattern skips work: see "
                 "bench/attn-sparse-bench for rates on kept entries)"
               : "");
  llvm::outs() << "\n";
}

/// --backward: the checked attention's gradients (RunBackward.cpp).
static int runBackwardOf(ModuleOp module, func::FuncOp entry,
                         const CheckedOp &checked) {
  if (checked.efficient) {
    entry.walk([&](Operation *op) {
      if (attnrt::describeEfficientOp(op))
        op->emitError() << "attn-run --backward: " << op->getName()
                        << " has no backward yet (docs/Dialect.md, "
                           "\"Backward\")";
    });
    return EXIT_FAILURE;
  }
  if (!checked.attention)
    return fail("--backward needs one attn.attention in @" +
                entry.getSymName());
  if (!loadLibrary.empty() || repeat > 0 || !outputFile.empty() ||
      !contextParallel.empty())
    return fail("--backward compiles and runs the backward once: no "
                "--load, --repeat, --output or --context-parallel");
  if (device != "cpu" && stats)
    return fail("--backward --stats counts the CPU kernels' tiles: not with "
                "--device");
  attnrt::BackwardRun run;
  run.prepareOperands = prepareOperands;
  run.buildKernel = buildKernel;
  run.buildHostKernel = buildHostKernel;
  run.onDevice = device != "cpu";
  run.check = check;
  run.stats = stats;
  run.operandGrads = operandGrads;
  run.perturb = perturbAmount();
  if (tolerance.getNumOccurrences())
    run.tolerance = tolerance;
  return attnrt::runBackward(module, entry, checked.attention, run);
}

/// A layer spec, if the input is one (runLayerSpec runs it).
static std::optional<int> runIfLayerSpec() {
  if (!attnspec::isSpecFile(inputFile))
    return std::nullopt;
  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(inputFile, &message);
  if (!file)
    return fail(message);
  llvm::SourceMgr layerSource;
  layerSource.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  if (!attnspec::isLayerSpec(layerSource))
    return std::nullopt;
  return runLayerSpec(layerSource);
}

/// Loads the input, applies a spec's `target:`, finds the entry (the other
/// functions are dropped: they would only add compile time) and verifies
/// it for the target. EXIT_SUCCESS to go on, else the exit status.
static int loadEntry(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                     OwningOpRef<ModuleOp> &module, func::FuncOp &entry,
                     CheckedOp &checked) {
  module = attnspec::loadModule(inputFile, sourceMgr, &context);
  if (!module)
    return EXIT_FAILURE;
  // A spec's `target:` is the default of --device and --gpu-target.
  if (auto specTarget =
          (*module)->getAttrOfType<StringAttr>(attnspec::kTargetAttrName)) {
    StringRef name = specTarget.getValue();
    if (!device.getNumOccurrences() && !name.starts_with("cpu")) {
      device = name.starts_with("cuda") ? "cuda" : "vulkan";
      if (!gpuTarget.getNumOccurrences())
        gpuTarget = name.str();
    }
    (*module)->removeAttr(attnspec::kTargetAttrName);
  }
  if (std::string message = checkDeviceOptions(); !message.empty())
    return fail(message);
  if (std::string message = findEntry(*module, entry, checked);
      !message.empty())
    return fail(message);
  // Compile the entry and what it calls only: the other entries of a test
  // file would just add compile time (and may be for another target).
  for (func::FuncOp f :
       llvm::make_early_inc_range(module->getOps<func::FuncOp>()))
    if (f != entry && SymbolTable::symbolKnownUseEmpty(f, *module))
      f.erase();
  // Element types the target cannot lower are reported at their op before
  // the steps below.
  PassManager verify(&context);
  if (device == "cpu") {
    // The target the JIT compiles for (--target, --bf16-products, this
    // CPU), refused here when it cannot be.
    attnrt::HostCompileOptions options;
    options.target = cpuTarget;
    options.bf16Products = bf16Products;
    llvm::Expected<attn::TargetDescription> target =
        attnrt::hostTarget(options);
    if (!target)
      return fail(llvm::toString(target.takeError()));
    (*module)->setAttr(attn::TargetAttr::getAttrName(),
                       target->toAttr(&context));
  } else {
    verify.addPass(attn::createAttnSetTarget({effectiveGpuTarget()}));
  }
  verify.addPass(attn::createAttnVerifyTarget());
  if (failed(verify.run(*module)))
    return EXIT_FAILURE;
  return EXIT_SUCCESS;
}

/// Runs the entry (JIT, --load or a device), then its statistics, output,
/// timing and --check.
static int runEntry(ModuleOp moduleOp, func::FuncOp entry, CheckedOp checked) {
  RankedTensorType lseType;
  RankedTensorType resultType = resultTypeOf(entry, lseType);
  if (!resultType)
    return EXIT_FAILURE;

  // Operands: generated, or read (stable addresses: descriptors point in).
  std::list<Operand> operands;
  std::map<std::string, unsigned> roleArgs;
  if (std::string message =
          prepareOperands(entry, resultType, checked.roles, operands, roleArgs);
      !message.empty())
    return fail(message);
  auto operandOf = [&](llvm::StringRef role) {
    return attnrt::operandForRole(operands, roleArgs, role.str());
  };
  std::optional<attnrt::reference::AttentionProblem> problem;
  double flops;
  if (!describeProblem(checked, problem, flops))
    return EXIT_FAILURE;
  bool usesSegmentIds = checked.attention && checked.attention.getQSegments();

  // Context parallel: every rank runs its share; rank 0 goes on to run the
  // whole attention in this process, to compare and to check.
  std::unique_ptr<attnrt::Communicator> ranks;
  std::vector<float> distributed;
  if (!contextParallel.empty()) {
    if (!checked.attention)
      return fail("--context-parallel needs one attn.attention in @" +
                  entry.getSymName());
    if (device != "cpu" || !loadLibrary.empty() || generic || stats)
      return fail("--context-parallel runs JIT-compiled CPU kernels: no "
                  "--device, --load, --generic or --stats");
    std::string message;
    ranks = attnrt::connectRanks(message);
    if (!ranks)
      return fail(message);
    message =
        attnrt::runContextParallel(*ranks, contextParallel, checked.attention,
                                   threads, operandOf, distributed);
    if (!message.empty())
      return fail(message);
    if (ranks->rank() != 0)
      return EXIT_SUCCESS;
  }

  std::string entrySymbol = entry.getSymName().str();
  auto kernel = buildKernel(moduleOp);
  if (!kernel)
    return fail(llvm::toString(kernel.takeError()));

  // Segment ids the reference and the tile counts read.
  std::vector<int64_t> qIds, kvIds;
  if (problem && usesSegmentIds) {
    Operand *qIdOperand = operandOf("q_segments");
    Operand *kvIdOperand = operandOf("kv_segments");
    if (qIdOperand && kvIdOperand) {
      qIds = attnrt::segmentIds(*qIdOperand);
      kvIds = attnrt::segmentIds(*kvIdOperand);
      problem->qSegments = qIds.data();
      problem->kvSegments = kvIds.data();
    } else if (check || stats) {
      return fail("segment ids computed inside @" + entrySymbol +
                  " cannot be checked or counted: pass them as arguments");
    }
  }

  // Run. A 16-bit result is widened to f32 after each call.
  std::vector<float> result(resultType.getNumElements());
  attnrt::FloatFormat resultFormat =
      attnrt::floatFormatOf(resultType.getElementType());
  std::vector<uint16_t> narrowResult(
      resultFormat == attnrt::FloatFormat::F32 ? 0 : result.size());
  std::vector<float> lseResult(lseType ? lseType.getNumElements() : 0);
  auto runOnce = [&]() -> llvm::Error {
    void *data = narrowResult.empty() ? static_cast<void *>(result.data())
                                      : narrowResult.data();
    attnrt::MemRefDescriptor out(data, resultType.getShape().vec());
    std::vector<attnrt::MemRefDescriptor *> args;
    for (Operand &operand : operands)
      args.push_back(&operand.descriptor);
    args.push_back(&out);
    std::optional<attnrt::MemRefDescriptor> lseOut;
    if (lseType) {
      lseOut.emplace(lseResult.data(), lseType.getShape().vec());
      args.push_back(&*lseOut);
    }
    if (llvm::Error error = (*kernel)->call(entrySymbol, args))
      return error;
    for (size_t e = 0; e < narrowResult.size(); ++e)
      result[e] = attnrt::fromBits(resultFormat, narrowResult[e]);
    return llvm::Error::success();
  };
  attnrt::resetTileCounts();
  if (llvm::Error error = runOnce())
    return fail(llvm::toString(std::move(error)));
  if (ranks) {
    // The gathered output against this process's own run of the whole
    // attention: both are f32 flash attention, merged in another order.
    attnrt::reference::Comparison c = attnrt::reference::compare(
        distributed, std::vector<double>(result.begin(), result.end()),
        result.size());
    llvm::outs() << llvm::formatv(
        "context parallel vs one process: max abs difference {0:e2}, scaled "
        "{1:e2}{2}\n",
        c.maxError, c.scaledError(),
        c.mismatches
            ? llvm::formatv(", {0} NON-FINITE MISMATCHES", c.mismatches).str()
            : std::string());
    if (!c.passes(tolerance))
      return fail("the context-parallel output differs from the "
                  "single-process one beyond --tolerance");
    result = std::move(distributed);
  }
  if (stats)
    attnrt::printTileStats(attnrt::readTileCounts(), problem);
  if (!outputFile.empty())
    if (llvm::Error error =
            attnrt::writeNpy(outputFile, resultType.getShape(), result))
      return fail(llvm::toString(std::move(error)));
  if (repeat > 0 && gpuKernel) {
    // Dispatch times from the device's timestamps: a call also creates
    // the pipeline (lavapipe compiles the shader each time).
    gpuKernel->repeats = repeat;
    if (llvm::Error error = runOnce())
      return fail(llvm::toString(std::move(error)));
    printMedian(gpuKernel->dispatchTimes(), flops,
                problem ? &*problem : nullptr);
  } else if (repeat > 0) {
    if (llvm::Error error =
            timeRuns(runOnce, flops, problem ? &*problem : nullptr))
      return fail(llvm::toString(std::move(error)));
  }
  if (!check)
    return EXIT_SUCCESS;
  return checkResult(checked, problem, operandOf, entrySymbol, result,
                     resultFormat, lseType ? &lseResult : nullptr);
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // --help shows the tool's own options; --help-hidden adds LLVM's.
  attntools::hideForeignOptions({&runCategory, &layerCategory});
  cl::ParseCommandLineOptions(argc, argv,
                              "attn-run: compile, run and check attention\n");
  stats = llvm::AreStatisticsEnabled();
  // 1e400 parses as infinity: a bound every result would pass.
  if (!std::isfinite(tolerance) || tolerance < 0)
    return fail("--tolerance must be a finite number >= 0");
  if (std::optional<int> status = runIfLayerSpec())
    return *status;
  // Options of layer specs: an attention spec or IR would ignore them
  // (docs/Hardening.md: options the chosen path ignores are errors).
  for (const auto &[name, option] : cl::getRegisteredOptions())
    if (llvm::is_contained(option->Categories, &layerCategory) &&
        option->getNumOccurrences())
      return fail("--" + name.str() +
                  " applies to layer specs, not to attention specs and IR");

  DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  MLIRContext context(registry);
  // Errors point at the spec or IR location; dumping the op adds noise.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module;
  func::FuncOp entry;
  CheckedOp checked;
  if (int status = loadEntry(context, sourceMgr, module, entry, checked))
    return status;
  if (backward)
    return runBackwardOf(*module, entry, checked);
  return runEntry(*module, entry, checked);
}
