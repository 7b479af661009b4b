//===- FuzzNpy.cpp - libFuzzer target: the .npy reader --------------------===//
#include "attn/Tooling/Npy.h"
#include "llvm/Support/Error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  for (bool f32Only : {true, false}) {
    llvm::Expected<attnrt::NpyArray> array =
        attnrt::parseNpy(bytes, "fuzz.npy", f32Only);
    if (!array) {
      llvm::consumeError(array.takeError());
      continue;
    }
    // What was read must be what the shape says.
    int64_t count = 1;
    for (int64_t d : array->shape)
      count *= d;
    if (array->dtype == attnrt::NpyDtype::F32 &&
        int64_t(array->data.size()) != count)
      __builtin_trap();
  }
  return 0;
}
