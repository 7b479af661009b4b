//===- GpuArtifact.cpp - attn-compile --target=vulkan|cuda ----------------===//
//
// GPU artifacts (docs/Gpu.md): OUT.spv (Vulkan) or OUT.ptx and, when ptxas
// is found ($CUDA_HOME/bin, /usr/local/cuda/bin, then PATH), OUT.cubin;
// next to them OUT.json, the launch descriptors the runtime reads.
//
//===----------------------------------------------------------------------===//
#include "GpuArtifact.h"
#include "attn/Analysis/TargetDescription.h"
#include "attn/Compiler/GpuCompiler.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attn-compile") << message << "\n";
  return EXIT_FAILURE;
}

/// `path` with its extension replaced by `extension` (".json").
static std::string sibling(llvm::StringRef path, llvm::StringRef extension) {
  llvm::SmallString<256> result(path);
  llvm::sys::path::replace_extension(result, extension);
  return std::string(result);
}

static int writeFile(const std::string &path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::ToolOutputFile file(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return fail("cannot write " + path + ": " + ec.message());
  file.os() << bytes;
  file.keep();
  return EXIT_SUCCESS;
}

/// ptxas from $CUDA_HOME, /usr/local/cuda or PATH.
static std::optional<std::string> findPtxas() {
  llvm::SmallVector<llvm::StringRef, 2> dirs;
  std::string cudaHome;
  if (const char *env = std::getenv("CUDA_HOME")) {
    cudaHome = (llvm::Twine(env) + "/bin").str();
    dirs.push_back(cudaHome);
  }
  dirs.push_back("/usr/local/cuda/bin");
  if (auto found = llvm::sys::findProgramByName("ptxas", dirs))
    return *found;
  if (auto found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  return std::nullopt;
}

int attntools::writeGpuArtifact(ModuleOp module,
                                const attnrt::GpuCompileOptions &options,
                                llvm::StringRef outputPath) {
  llvm::StringRef target = options.target;
  std::optional<attn::TargetDescription> description =
      attn::TargetDescription::lookup(target);
  if (!description || description->isCpu())
    return fail("--target must be cpu or one of the GPU targets (" +
                attn::TargetDescription::knownNames() + ")");
  if (outputPath == "-")
    return fail("--target=" + target + " needs -o FILE");
  llvm::Expected<attnrt::GpuArtifact> artifact =
      attnrt::compileForGpu(module, options);
  if (!artifact)
    return fail(llvm::toString(artifact.takeError()));
  if (int status = writeFile(sibling(outputPath, ".json"),
                             attnrt::writeGpuDescriptors(artifact->kernels)))
    return status;
  if (artifact->isSpirv)
    return writeFile(
        outputPath.str(),
        llvm::StringRef(reinterpret_cast<const char *>(artifact->spirv.data()),
                        artifact->spirv.size() * 4));
  if (int status = writeFile(outputPath.str(), artifact->ptx))
    return status;
  std::optional<std::string> ptxas = findPtxas();
  if (!ptxas) {
    llvm::WithColor::note(llvm::errs(), "attn-compile")
        << "ptxas not found ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH): "
           "wrote PTX only\n";
    return EXIT_SUCCESS;
  }
  std::string cubin = sibling(outputPath, ".cubin");
  std::string arch = "-arch=" + description->chip;
  llvm::StringRef args[] = {*ptxas, arch, outputPath, "-o", cubin};
  std::string message;
  int status =
      llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt, {}, 0, 0, &message);
  if (status != 0)
    return fail("ptxas failed on " + outputPath + " (exit status " +
                llvm::Twine(status) + ")" +
                (message.empty() ? "" : ": " + message));
  return EXIT_SUCCESS;
}
