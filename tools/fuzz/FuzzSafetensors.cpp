//===- FuzzSafetensors.cpp - libFuzzer target: the safetensors reader -----===//
#include "attn/Tooling/Safetensors.h"
#include "llvm/Support/MemoryBuffer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = attnrt::SafetensorsFile::fromBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.safetensors"),
      "fuzz.safetensors");
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  // Every tensor the header validated must convert without reading past
  // the file.
  for (const std::string &name : file->names()) {
    auto tensor = file->read(name, *file->shape(name));
    if (!tensor)
      llvm::consumeError(tensor.takeError());
  }
  return 0;
}
