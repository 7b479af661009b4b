//===- attn-compile.cpp - attention specs to CPU artifacts ----------------===//
//
//   attn-compile INPUT.{yaml,mlir} [-o OUT]
//       [--emit=mlir|lowered|llvm|obj|so|header|mask-svg] [--mcpu=native|CPU]
//       [--dump-after=PASS] [--generic] [--stats] [--head=N]
//       [--layer-shape=BATCHxLENGTH,...]
//
// Like clang: the input is a spec (docs/Spec.md) or attn IR; the output is
// the IR at a chosen stage, an object file or shared library exporting the
// C interface `_mlir_ciface_<name>`, or the C header declaring it. A layer
// spec gives the attention kernels of its stack and a manifest the C API's
// attn_stack_* runs them from (LayerArtifact.h).
// --stats reports, per attention op, the key tiles the CPU kernels visit;
// --emit=mask-svg draws them.
//
//===----------------------------------------------------------------------===//
#include "../ToolOptions.h"
#include "GpuArtifact.h"
#include "KernelSignature.h"
#include "LayerArtifact.h"
#include "MaskSvg.h"
#include "attn/Analysis/KernelPlan.h"
#include "attn/Dialect/Attn/IR/AttnDialect.h"
#include "attn/Dialect/Attn/IR/AttnOps.h"
#include "attn/Pipelines/Pipelines.h"
#include "attn/Spec/Spec.h"
#include "attn/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/Statistic.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include <functional>
#include <map>
#include <set>

using namespace mlir;
namespace cl = llvm::cl;

enum class Emit { Mlir, Lowered, Llvm, Obj, So, Header, MaskSvg };

static cl::OptionCategory compileCategory("attn-compile options");
static cl::opt<std::string> inputFile(cl::Positional,
                                      cl::desc("<spec.yaml | input.mlir>"),
                                      cl::Required, cl::cat(compileCategory));
static cl::opt<std::string> outputFile("o", cl::desc("output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(compileCategory));
static cl::opt<Emit>
    emit("emit", cl::desc("what to produce"), cl::init(Emit::Obj),
         cl::values(clEnumValN(Emit::Mlir, "mlir", "attn IR (tensors)"),
                    clEnumValN(Emit::Lowered, "lowered", "LLVM dialect IR"),
                    clEnumValN(Emit::Llvm, "llvm", "LLVM IR after -O3"),
                    clEnumValN(Emit::Obj, "obj", "object file (default)"),
                    clEnumValN(Emit::So, "so", "shared library"),
                    clEnumValN(Emit::Header, "header", "C header"),
                    clEnumValN(Emit::MaskSvg, "mask-svg",
                               "SVG of the key tiles the CPU kernel visits")),
         cl::cat(compileCategory));
static cl::opt<std::string> target(
    "target",
    cl::desc(
        "what the kernels run on: cpu (this host; the default), "
        "vulkan (SPIR-V, -o OUT.spv), cuda / cuda-sm90 / cuda-sm90a (PTX, -o "
        "OUT.ptx, and OUT.cubin when ptxas is found); GPU targets also "
        "write OUT.json, the launch descriptors (docs/Gpu.md)"),
    cl::init("cpu"), cl::cat(compileCategory));
static cl::opt<std::string> mcpu("mcpu",
                                 cl::desc("target CPU (default: this one)"),
                                 cl::init("native"), cl::cat(compileCategory));
static cl::opt<std::string>
    dumpAfter("dump-after",
              cl::desc("print the IR after this pipeline pass to stderr "
                       "(e.g. attn-tile, attn-to-cpu-kernels)"),
              cl::cat(compileCategory));
static cl::opt<bool>
    generic("generic", cl::desc("generic lowering of the tiled form only"),
            cl::cat(compileCategory));
static cl::opt<bool>
    gpuTf32("gpu-tf32",
            cl::desc("GPU targets: f32 attention on the tensor-core kernel "
                     "with TF32 products (10-bit mantissas; opt-in)"),
            cl::cat(compileCategory));
static cl::opt<bool>
    gpuTf32x3("gpu-3xtf32",
              cl::desc("GPU targets: f32 attention on the tensor-core kernel "
                       "with 3xTF32 products (about f32's error)"),
              cl::cat(compileCategory));
static cl::opt<int64_t> gpuWorkgroupRows(
    "gpu-workgroup-rows",
    cl::desc("GPU targets: query rows per workgroup, a multiple of 16 up to "
             "256 (default: the target's)"),
    cl::init(0), cl::cat(compileCategory));
enum class Bf16Products { Auto, Dot, Widen };
static cl::opt<Bf16Products> bf16Products(
    "bf16-products",
    cl::desc("how bf16 attention and layer products run on the target CPU"),
    cl::values(clEnumValN(Bf16Products::Auto, "auto",
                          "vdpbf16ps where the target has AVX-512 BF16, else "
                          "widened (default)"),
               clEnumValN(Bf16Products::Dot, "dot",
                          "vdpbf16ps (an error on other targets)"),
               clEnumValN(Bf16Products::Widen, "widen",
                          "widened to f32 vectors")),
    cl::init(Bf16Products::Auto), cl::cat(compileCategory));
static cl::opt<int64_t> head("head", cl::desc("head drawn by --emit=mask-svg"),
                             cl::init(0), cl::cat(compileCategory));
// LLVM registers --stats itself (its statistics, empty in release builds);
// attn-compile reads the same flag.
static cl::list<std::string> layerShapes(
    "layer-shape",
    cl::desc("layer specs whose attention kind needs static sizes (all but "
             "softmax): BATCHxLENGTH to compile a self-attention kernel for "
             "(repeatable, comma-separated)"),
    cl::CommaSeparated, cl::cat(compileCategory));
static cl::extrahelp statsHelp(
    "\n--stats: report, per attention op, the key tiles the vectorized CPU "
    "kernels visit (a remark)\n");

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-compile") << message << "\n";
  return EXIT_FAILURE;
}

/// Keeps a written output file, or reports why it could not be written
/// (e.g. a full disk) and removes it: 0 or EXIT_FAILURE.
static int keepOutput(llvm::ToolOutputFile &output) {
  output.os().flush();
  if (output.os().has_error()) {
    std::string message = output.os().error().message();
    output.os().clear_error();
    return fail("cannot write " + output.getFilename() + ": " + message);
  }
  output.keep();
  return EXIT_SUCCESS;
}

/// C type of a tensor element in the generated header.
static const char *cType(Type type) {
  if (type.isF32())
    return "float";
  if (type.isInteger(64))
    return "int64_t";
  if (type.isInteger(32))
    return "int32_t";
  if (type.isInteger(1) || type.isInteger(8))
    return "uint8_t";
  return nullptr;
}

/// The C header declaring each public function's C interface.
static LogicalResult writeHeader(ModuleOp module, llvm::raw_ostream &os) {
  std::string guard = "ATTN_" + llvm::sys::path::stem(inputFile).upper() + "_H";
  for (char &c : guard)
    if (!llvm::isAlnum(c))
      c = '_';
  os << "/* Generated by attn-compile from "
     << llvm::sys::path::filename(inputFile) << ". */\n#ifndef " << guard
     << "\n#define " << guard
     << "\n\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" "
        "{\n#endif\n";
  std::set<std::string> typedefs;
  std::string declarations;
  llvm::raw_string_ostream decl(declarations);
  auto descriptor = [&](RankedTensorType type) -> std::string {
    const char *element = cType(type.getElementType());
    if (!element)
      return "";
    std::string name = llvm::formatv(
        "attn_memref_{0}_{1}d",
        llvm::StringRef(element).take_until([](char c) { return c == '_'; }),
        type.getRank());
    if (typedefs.insert(name).second)
      os << llvm::formatv(
          "\n/* MLIR's rank-{0} memref descriptor (C interface). */\n"
          "typedef struct {{\n  {1} *allocated;\n  {1} *aligned;\n"
          "  int64_t offset;\n  int64_t sizes[{0}];\n  int64_t strides[{0}];\n"
          "} {2};\n",
          type.getRank(), element, name);
    return name;
  };
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn.isPublic() || fn.isExternal())
      continue;
    if (fn.getNumResults() == 0)
      return fn.emitError("attn-compile headers need at least one result");
    // One result is `result`; several (a backward's dq, dk, dv) are
    // result0, result1, ... in order, after the inputs.
    bool single = fn.getNumResults() == 1;
    decl << "\n/* @" << fn.getSymName() << ": reads arg0... and writes "
         << (single ? "the result into *result"
                    : "the results into *result0...")
         << ", memory the caller owns (destination-passing style). */\n"
            "void _mlir_ciface_"
         << fn.getSymName() << "(";
    SmallVector<std::pair<Type, std::string>> params;
    for (auto [n, type] : llvm::enumerate(fn.getArgumentTypes()))
      params.push_back({type, "arg" + std::to_string(n)});
    for (auto [n, type] : llvm::enumerate(fn.getResultTypes()))
      params.push_back({type, single ? std::string("result")
                                     : "result" + std::to_string(n)});
    for (auto [n, param] : llvm::enumerate(params)) {
      auto type = dyn_cast<RankedTensorType>(param.first);
      std::string name = type ? descriptor(type) : "";
      if (name.empty())
        return fn.emitError("attn-compile headers support ranked tensors of "
                            "f32, i1, i32 and i64");
      decl << (n ? ", " : "") << name << " *" << param.second << " /* " << type
           << " */";
    }
    decl << ");\n";
  }
  os << declarations << "\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard
     << " */\n";
  return success();
}

/// Where libattn_support.so is: ../lib next to this executable (the build
/// tree's bin/ and lib/, or an install prefix), else the build tree's
/// library directory this tool was configured with.
static std::string supportLibraryDir(const char *argv0) {
  static int anchor;
  std::string executable = llvm::sys::fs::getMainExecutable(argv0, &anchor);
  llvm::SmallString<256> dir(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(executable)));
  llvm::sys::path::append(dir, "lib");
  llvm::SmallString<256> library(dir);
  llvm::sys::path::append(library, "libattn_support.so");
  if (!executable.empty() && llvm::sys::fs::exists(library))
    return dir.str().str();
  return ATTN_SUPPORT_LIBRARY_DIR;
}

/// "BxL" as (B, L), both >= 1.
static std::optional<std::pair<int64_t, int64_t>>
parseLayerShape(llvm::StringRef text) {
  auto [batch, length] = text.split('x');
  int64_t b, l;
  if (batch.getAsInteger(10, b) || length.getAsInteger(10, l) || b < 1 ||
      l < 1 || b > (int64_t(1) << 20) || l > (int64_t(1) << 24))
    return std::nullopt;
  return std::make_pair(b, l);
}

static std::unique_ptr<llvm::TargetMachine> createTargetMachine();

/// The target description of `machine` (its CPU's features), less AMX
/// (an artifact would need its caller to ask the OS for the tile state)
/// and less what --bf16-products rules out.
static FailureOr<attn::TargetDescription>
targetOf(const llvm::TargetMachine &machine) {
  llvm::StringMap<bool> features;
  for (const char *feature :
       {"avx512f", "avx512bf16", "amx-bf16", "avxneconvert"})
    features[feature] =
        machine.getMCSubtargetInfo()->checkFeatures(std::string("+") + feature);
  attn::TargetDescription target =
      attn::TargetDescription::forCpuFeatures(features);
  llvm::erase(target.features, "amx-bf16");
  if (bf16Products == Bf16Products::Dot && !target.bf16ProductsByDot()) {
    fail("--bf16-products=dot: the target CPU has no AVX-512 BF16");
    return failure();
  }
  if (bf16Products == Bf16Products::Widen)
    llvm::erase(target.features, "avx512bf16");
  return target;
}

/// The input as attn IR: a spec's module, a layer spec's kernels (and its
/// manifest), or IR as written.
static OwningOpRef<ModuleOp> loadInput(llvm::SourceMgr &sourceMgr,
                                       MLIRContext *context,
                                       std::string &layerManifest) {
  if (attnspec::isSpecFile(inputFile)) {
    std::string message;
    std::unique_ptr<llvm::MemoryBuffer> file =
        openInputFile(inputFile, &message);
    if (!file) {
      fail(message);
      return nullptr;
    }
    llvm::SourceMgr probe;
    probe.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    if (attnspec::isLayerSpec(probe)) {
      std::vector<std::pair<int64_t, int64_t>> shapes;
      for (const std::string &text : layerShapes) {
        auto shape = parseLayerShape(text);
        if (!shape) {
          fail("--layer-shape=" + text + ": expected BATCHxLENGTH, both >= 1");
          return nullptr;
        }
        shapes.push_back(*shape);
      }
      sourceMgr.AddNewSourceBuffer(openInputFile(inputFile, &message),
                                   llvm::SMLoc());
      std::optional<attnspec::LayerSpec> spec =
          attnspec::readLayerSpec(sourceMgr);
      if (!spec)
        return nullptr;
      // The products' packed panels depend on the vector width.
      std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine();
      if (!machine)
        return nullptr;
      FailureOr<attn::TargetDescription> target = targetOf(*machine);
      if (failed(target))
        return nullptr;
      return attntools::buildLayerModule(*spec, shapes, *target, sourceMgr,
                                         context, layerManifest);
    }
  }
  if (!layerShapes.empty()) {
    fail("--layer-shape applies to layer specs only");
    return nullptr;
  }
  return attnspec::loadModule(inputFile, sourceMgr, context);
}

/// --emit=mask-svg: the key tiles of the module's first attention.
static int writeMaskSvg(ModuleOp module, llvm::ToolOutputFile &output) {
  attn::AttentionOp attention;
  module->walk([&](attn::AttentionOp op) {
    if (!attention)
      attention = op;
  });
  if (!attention)
    return fail("--emit=mask-svg: the input has no attn.attention");
  attn::TargetDescription target =
      attn::TargetDescription::forCpuFeatures(llvm::sys::getHostCPUFeatures());
  attn::KernelPlan plan =
      attn::planKernel(attn::AttentionFacts::of(attention), target, 0, false);
  if (failed(attnspec::writeMaskSvg(attention, plan.queryTiling, plan.keyTile,
                                    head, output.os())))
    return EXIT_FAILURE;
  return keepOutput(output);
}

/// The target machine: this CPU, or the one --mcpu names; null after
/// reporting why not.
static std::unique_ptr<llvm::TargetMachine> createTargetMachine() {
  std::string error;
  std::string triple = llvm::sys::getProcessTriple();
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(llvm::Triple(triple), error);
  if (!target) {
    fail(error);
    return nullptr;
  }
  std::string cpu =
      mcpu == "native" ? llvm::sys::getHostCPUName().str() : mcpu.getValue();
  // An unknown CPU would only warn and then end in LLVM's fatal error.
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(llvm::Triple(triple), "", ""));
  if (!subtarget || !subtarget->isCPUStringValid(cpu)) {
    fail("--mcpu=" + cpu + " is not a CPU of " + triple +
         " (llc -mcpu=help lists them)");
    return nullptr;
  }
  std::string features;
  if (mcpu == "native")
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      features += (feature.second ? "+" : "-") + feature.first().str() + ",";
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      llvm::Triple(triple), cpu, features, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    fail("cannot create a target machine for --mcpu=" + cpu);
  return machine;
}

/// attn IR -> LLVM dialect with the CPU pipeline for `machine`.
static LogicalResult lowerToLLVMDialect(ModuleOp module,
                                        llvm::TargetMachine &machine) {
  FailureOr<attn::TargetDescription> target = targetOf(machine);
  if (failed(target))
    return failure();
  module->setAttr(attn::TargetAttr::getAttrName(),
                  target->toAttr(module.getContext()));
  attn::CpuPipelineOptions pipeline;
  pipeline.cpuKernels = !generic;
  pipeline.reportTiles = llvm::AreStatisticsEnabled();
  PassManager pm(module.getContext());
  attn::buildCpuPipeline(pm, pipeline);
  if (!dumpAfter.empty()) {
    module.getContext()->disableMultithreading();
    pm.enableIRPrinting([](Pass *, Operation *) { return false; },
                        [&](Pass *pass, Operation *) {
                          return pass->getArgument() == dumpAfter;
                        },
                        /*printModuleScope=*/true,
                        /*printAfterOnlyOnChange=*/false);
  }
  return pm.run(module);
}

/// A constant NUL-terminated string the artifact exports as `name`.
static void exportString(llvm::Module &module, const llvm::Twine &name,
                         llvm::StringRef text) {
  llvm::LLVMContext &context = module.getContext();
  new llvm::GlobalVariable(
      module,
      llvm::ArrayType::get(llvm::Type::getInt8Ty(context), text.size() + 1),
      /*isConstant=*/true, llvm::GlobalValue::ExternalLinkage,
      llvm::ConstantDataArray::getString(context, text), name);
}

/// Machine code for `module` into `path`.
static int writeObject(llvm::Module &module, llvm::TargetMachine &machine,
                       const std::string &path) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail("cannot write " + path + ": " + ec.message());
  llvm::legacy::PassManager codegen;
  if (machine.addPassesToEmitFile(codegen, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return fail("the target cannot emit object files");
  codegen.run(module);
  os.close();
  // A full disk is an error like any other, not LLVM's fatal one when the
  // stream is destroyed with its error unchecked.
  if (os.has_error()) {
    std::string message = os.error().message();
    os.clear_error();
    llvm::sys::fs::remove(path);
    return fail("cannot write " + path + ": " + message);
  }
  return EXIT_SUCCESS;
}

/// Links `objectPath` into the shared library -o names, against the OpenMP
/// runtime (found again at load time through the rpath) and, when the
/// kernels call it, libattn_support. Nothing of MLIR or LLVM is needed at
/// run time.
static int linkSharedLibrary(const std::string &objectPath, bool usesSupport,
                             const char *argv0) {
  llvm::SmallVector<llvm::StringRef> args = {
      ATTN_LLD,   "-shared",  "-o",
      outputFile, objectPath, "-L" ATTN_LLVM_LIBRARY_DIR,
      "-lomp",    "-rpath",   ATTN_LLVM_LIBRARY_DIR};
  std::string supportDir, supportFlag;
  if (usesSupport) {
    supportDir = supportLibraryDir(argv0);
    supportFlag = "-L" + supportDir;
    args.append({supportFlag, "-lattn_support", "-rpath", supportDir});
  }
  std::string error;
  int status =
      llvm::sys::ExecuteAndWait(ATTN_LLD, args, std::nullopt, {}, 0, 0, &error);
  llvm::sys::fs::remove(objectPath);
  if (status != 0)
    return fail("linking " + outputFile + " failed: " + error);
  return EXIT_SUCCESS;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  // --help shows the tool's own options; --help-hidden adds LLVM's.
  attntools::hideForeignOptions({&compileCategory});
  cl::ParseCommandLineOptions(argc, argv,
                              "attn-compile: attention specs to artifacts\n");

  DialectRegistry registry;
  attnspec::registerToolDialects(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  // CUDA kernels are translated to LLVM IR for the NVPTX back end.
  registerAllToLLVMIRTranslations(registry);
  MLIRContext context(registry);
  // Remarks and errors name the op by location; the op itself can be huge.
  context.printOpOnDiagnostic(false);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string layerManifest; // set for layer specs
  OwningOpRef<ModuleOp> module = loadInput(sourceMgr, &context, layerManifest);
  if (!module)
    return EXIT_FAILURE;

  // A spec's `target:` is the default of --target.
  if (auto specTarget =
          (*module)->getAttrOfType<StringAttr>(attnspec::kTargetAttrName)) {
    if (!target.getNumOccurrences())
      target = specTarget.str();
    (*module)->removeAttr(attnspec::kTargetAttrName);
  }
  if (target != "cpu") {
    if (emit.getNumOccurrences())
      return fail("--target=" + target +
                  " writes its own artifacts; "
                  "--emit applies to --target=cpu");
    if (gpuTf32 && gpuTf32x3)
      return fail("--gpu-tf32 and --gpu-3xtf32 exclude each other");
    attnrt::GpuCompileOptions options;
    options.target = target;
    options.tf32 = gpuTf32;
    options.tf32x3 = gpuTf32x3;
    options.workgroupRows = gpuWorkgroupRows;
    return attntools::writeGpuArtifact(*module, options, outputFile);
  }
  if (gpuWorkgroupRows.getNumOccurrences() || gpuTf32 || gpuTf32x3)
    return fail("--gpu-workgroup-rows, --gpu-tf32 and --gpu-3xtf32 apply to "
                "GPU targets");

  bool binary = emit == Emit::Obj || emit == Emit::So;
  if (binary && outputFile == "-")
    return fail("--emit=obj and --emit=so need -o FILE");
  std::string error;
  // Binary outputs are written below; text goes through this stream.
  auto output =
      openOutputFile(binary ? std::string("-") : outputFile.getValue(), &error);
  if (!output)
    return fail(error);
  if (emit == Emit::Mlir) {
    module->print(output->os());
    return keepOutput(*output);
  }
  if (emit == Emit::Header)
    return failed(writeHeader(*module, output->os())) ? EXIT_FAILURE
                                                      : keepOutput(*output);
  if (emit == Emit::MaskSvg)
    return writeMaskSvg(*module, *output);

  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine();
  if (!machine)
    return EXIT_FAILURE;
  // The signatures of the entry points are kept for the artifact
  // (signatureOf) before lowering rewrites them.
  std::vector<std::pair<std::string, std::string>> signatures;
  for (auto fn : module->getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal()) {
      fn->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  UnitAttr::get(&context));
      signatures.emplace_back(fn.getSymName().str(),
                              attntools::signatureOf(fn));
    }
  if (failed(lowerToLLVMDialect(*module, *machine)))
    return EXIT_FAILURE;
  if (emit == Emit::Lowered) {
    module->print(output->os());
    return keepOutput(*output);
  }

  // LLVM dialect -> LLVM IR, optimized for the target.
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(*module, llvmContext, inputFile);
  if (!llvmModule)
    return fail("translation to LLVM IR failed");
  llvmModule->setTargetTriple(machine->getTargetTriple());
  // `_attn_signature_<function>`: the C API checks calls against it; a
  // layer spec's manifest is what attn_stack_create reads.
  for (const auto &[name, signature] : signatures)
    exportString(*llvmModule, "_attn_signature_" + name, signature);
  if (!layerManifest.empty())
    exportString(*llvmModule, "_attn_layer_manifest", layerManifest);
  // Calls of the runtime's support functions (FFT, sort, top-k, strided
  // memref copies, the kernels' heap) need libattn_support.so.
  bool usesSupport = llvm::any_of(llvmModule->functions(), [](auto &f) {
    return f.isDeclaration() &&
           (f.getName().starts_with("_mlir_ciface_attn_") ||
            f.getName().starts_with("_mlir_memref_to_llvm_") ||
            f.getName() == "memrefCopy");
  });
  llvmModule->setDataLayout(machine->createDataLayout());
  if (llvm::Error err =
          makeOptimizingTransformer(3, 0, machine.get())(llvmModule.get()))
    return fail(llvm::toString(std::move(err)));
  if (emit == Emit::Llvm) {
    llvmModule->print(output->os(), nullptr);
    return keepOutput(*output);
  }

  // Machine code: the object file, or one linked into a shared library.
  std::string objectPath = outputFile;
  if (emit == Emit::So) {
    llvm::SmallString<128> temp;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("attn", "o", temp))
      return fail("cannot create a temporary file: " + ec.message());
    objectPath = temp.str().str();
  }
  if (int status = writeObject(*llvmModule, *machine, objectPath))
    return status;
  if (emit == Emit::Obj)
    return EXIT_SUCCESS;
  return linkSharedLibrary(objectPath, usesSupport, argv[0]);
}
