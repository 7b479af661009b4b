//===- attn-gpu-call-bench.cpp - what a GPU call costs besides its kernels ===//
//
// The overhead of calling a GPU artifact, in one process, alternating the
// ways a call can be made over rounds:
//   one-shot  runGpuFunction per call: loads the pipelines, uploads the
//             constant tables, allocates and copies every operand (what
//             every call cost before GpuFunction kept them);
//   host      a prepared GpuFunction with host operands: copies the inputs
//             in and the outputs back, nothing else;
//   device    a prepared GpuFunction on device buffers: binds and launches.
// For each, the median wall-clock time of a call and the median kernel
// time the device measured (timestamps / events); their difference is the
// overhead. Operands are zero-filled (any attention accepts zeros), but
// --iota=I fills operand I with the int32 words 0, 1, 2, ...: a paged KV
// cache's page table then lists every page once, in order (a zero table
// would read page 0 for every row, from cache).
//
//   attn-gpu-call-bench KERNELS.spv|ptx FUNCTION [--calls=N] [--rounds=R]
//                       [--iota=I]
//
//===----------------------------------------------------------------------===//
#include "attn/Runtime/Gpu.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

using namespace attnrt;

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: attn-gpu-call-bench KERNELS.spv|ptx "
                         "FUNCTION [--calls=N] [--rounds=R]\n");
    return 2;
  }
  std::string code = argv[1], function = argv[2];
  int calls = 50, rounds = 3, iota = -1;
  for (int i = 3; i < argc; ++i) {
    if (!std::strncmp(argv[i], "--calls=", 8))
      calls = std::max(1, std::atoi(argv[i] + 8));
    else if (!std::strncmp(argv[i], "--rounds=", 9))
      rounds = std::max(1, std::atoi(argv[i] + 9));
    else if (!std::strncmp(argv[i], "--iota=", 7))
      iota = std::atoi(argv[i] + 7);
  }
  GpuProgram program;
  program.isSpirv = code.size() > 4 && code.substr(code.size() - 4) == ".spv";
  std::ifstream codeFile(code, std::ios::binary);
  std::ifstream jsonFile(code.substr(0, code.find_last_of('.')) + ".json");
  std::string text(std::istreambuf_iterator<char>(codeFile), {});
  std::string json(std::istreambuf_iterator<char>(jsonFile), {});
  std::string error;
  if (text.empty() || !parseGpuDescriptors(json, program.kernels, error)) {
    std::fprintf(stderr, "error: cannot read %s and its .json: %s\n",
                 code.c_str(), error.c_str());
    return 1;
  }
  if (program.isSpirv) {
    program.spirv.resize(text.size() / 4);
    std::memcpy(program.spirv.data(), text.data(), program.spirv.size() * 4);
  } else {
    program.ptx = text;
  }
  std::unique_ptr<GpuDevice> device = openGpuDevice(program.isSpirv, error);
  std::unique_ptr<GpuFunction> prepared =
      device ? GpuFunction::prepare(program, *device, function, error)
             : nullptr;
  if (!prepared) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }

  // Host operands and device buffers of the same sizes, zero-filled.
  const std::vector<uint64_t> &bytes = prepared->operandBytes();
  std::vector<std::vector<char>> host;
  std::vector<std::shared_ptr<GpuBuffer>> buffers;
  std::vector<GpuOperand> onHost, onDevice;
  for (uint64_t b : bytes) {
    host.emplace_back(b, 0);
    if (int(host.size()) - 1 == iota)
      for (uint64_t w = 0; w < b / 4; ++w) {
        int32_t word = int32_t(w);
        std::memcpy(host.back().data() + 4 * w, &word, 4);
      }
    buffers.push_back(device->allocate(b, error));
    if (!buffers.back() ||
        !device->write(*buffers.back(), host.back().data(), b, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    onHost.push_back({host.back().data(), b, nullptr});
    GpuOperand resident;
    resident.buffer = buffers.back().get();
    onDevice.push_back(resident);
  }

  const char *modes[] = {"one-shot", "host", "device"};
  std::vector<double> wall[3], kernel[3];
  for (int r = 0; r < rounds; ++r)
    for (int m = 0; m < 3; ++m)
      for (int c = 0; c < calls; ++c) {
        std::vector<double> ms;
        auto start = std::chrono::steady_clock::now();
        bool ok = m == 0 ? runGpuFunction(program, *device, function, onHost, 1,
                                          &ms, nullptr, error)
                  : m == 1 ? prepared->call(onHost, 1, &ms, nullptr, error)
                           : prepared->call(onDevice, 1, &ms, nullptr, error);
        double elapsed = std::chrono::duration<double, std::milli>(
                             std::chrono::steady_clock::now() - start)
                             .count();
        if (!ok) {
          std::fprintf(stderr, "error: %s\n", error.c_str());
          return 1;
        }
        wall[m].push_back(elapsed);
        kernel[m].push_back(ms.empty() ? 0 : ms[0]);
      }
  uint64_t total = 0;
  for (uint64_t b : bytes)
    total += b;
  std::printf("device: %s\nfunction: %s, %zu operands, %.1f KiB; %d calls x "
              "%d rounds per mode, medians\n",
              device->describe().c_str(), function.c_str(), bytes.size(),
              total / 1024.0, calls, rounds);
  std::printf("%-9s %10s %10s %12s\n", "mode", "call ms", "kernel ms",
              "overhead ms");
  for (int m = 0; m < 3; ++m) {
    double w = median(wall[m]), k = median(kernel[m]);
    std::printf("%-9s %10.3f %10.3f %12.3f\n", modes[m], w, k, w - k);
  }
  return 0;
}
