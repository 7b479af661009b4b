//===- CApiGpu.cpp - C API of GPU kernels on device buffers --------------===//
//
// attn-c/Gpu.h over attn_gpu's GpuDevice and GpuFunction: handles hold
// shared owners, so a buffer or program released after its device still
// finds it, and every entry point runs guarded (no exception crosses the C
// boundary).
//
//===----------------------------------------------------------------------===//
#include "CApiObjects.h"
#include "attn-c/Gpu.h"
#include "attn/Runtime/Gpu.h"
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>

using namespace attnrt;

struct attn_gpu_device {
  std::shared_ptr<GpuDevice> device;
  std::string description;
};

struct attn_gpu_buffer {
  std::shared_ptr<GpuDevice> device;
  std::shared_ptr<GpuBuffer> buffer;
};

struct attn_gpu_program {
  std::shared_ptr<GpuDevice> device;
  GpuProgram program;
  /// Functions called so far, ready on the device; calls take turns.
  std::mutex mutex;
  std::vector<std::pair<std::string, std::unique_ptr<GpuFunction>>> prepared;
  double lastMilliseconds = -1;
};

namespace {

constexpr int64_t kMaxOperands = 16;

template <typename T> T fail(T failed, std::string message) {
  attnc::setLastError(std::move(message));
  return failed;
}

bool readFile(const std::string &path, std::string &text, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read " + path;
    return false;
  }
  text.assign(std::istreambuf_iterator<char>(in), {});
  return true;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// `function` of `program`, prepared on first use; null with the error set.
/// The caller holds the program's mutex.
GpuFunction *preparedFunction(attn_gpu_program *program,
                              const std::string &function) {
  for (auto &[name, f] : program->prepared)
    if (name == function)
      return f.get();
  std::string error;
  std::unique_ptr<GpuFunction> f =
      GpuFunction::prepare(program->program, *program->device, function, error);
  if (!f)
    return fail<GpuFunction *>(nullptr, error);
  return program->prepared.emplace_back(function, std::move(f)).second.get();
}

} // namespace

extern "C" {

attn_gpu_device *attn_gpu_device_open(const char *kind) {
  return attnc::guarded<attn_gpu_device *>(
      "attn_gpu_device_open", nullptr, [&]() -> attn_gpu_device * {
        if (!kind)
          return fail<attn_gpu_device *>(nullptr,
                                         "attn_gpu_device_open: kind is NULL");
        std::string k(kind);
        if (k != "vulkan" && k != "cuda")
          return fail<attn_gpu_device *>(
              nullptr, "attn_gpu_device_open: unknown kind '" + k +
                           "' (vulkan or cuda)");
        std::string error;
        std::unique_ptr<GpuDevice> device = openGpuDevice(k == "vulkan", error);
        if (!device)
          return fail<attn_gpu_device *>(nullptr, error);
        std::string description = device->describe();
        return new attn_gpu_device{std::move(device), std::move(description)};
      });
}

const char *attn_gpu_device_describe(attn_gpu_device *device) {
  if (!device)
    return fail<const char *>(nullptr, "attn_gpu_device_describe: device is "
                                       "NULL");
  return device->description.c_str();
}

void attn_gpu_device_release(attn_gpu_device *device) { delete device; }

attn_gpu_buffer *attn_gpu_buffer_create(attn_gpu_device *device,
                                        int64_t bytes) {
  return attnc::guarded<attn_gpu_buffer *>(
      "attn_gpu_buffer_create", nullptr, [&]() -> attn_gpu_buffer * {
        if (!device || bytes < 0)
          return fail<attn_gpu_buffer *>(
              nullptr, "attn_gpu_buffer_create: device is NULL or bytes < 0");
        std::string error;
        std::shared_ptr<GpuBuffer> buffer =
            device->device->allocate(uint64_t(bytes), error);
        if (!buffer)
          return fail<attn_gpu_buffer *>(nullptr, error);
        return new attn_gpu_buffer{device->device, std::move(buffer)};
      });
}

attn_gpu_buffer *attn_gpu_buffer_wrap(attn_gpu_device *device,
                                      uint64_t devicePointer, int64_t bytes) {
  return attnc::guarded<attn_gpu_buffer *>(
      "attn_gpu_buffer_wrap", nullptr, [&]() -> attn_gpu_buffer * {
        if (!device || bytes < 0)
          return fail<attn_gpu_buffer *>(
              nullptr, "attn_gpu_buffer_wrap: device is NULL or bytes < 0");
        std::string error;
        std::shared_ptr<GpuBuffer> buffer =
            device->device->wrap(devicePointer, uint64_t(bytes), error);
        if (!buffer)
          return fail<attn_gpu_buffer *>(nullptr, error);
        return new attn_gpu_buffer{device->device, std::move(buffer)};
      });
}

int64_t attn_gpu_buffer_bytes(const attn_gpu_buffer *buffer) {
  return buffer ? int64_t(buffer->buffer->bytes()) : -1;
}

int attn_gpu_buffer_write(attn_gpu_buffer *buffer, const void *host,
                          int64_t bytes) {
  return attnc::guarded<int>("attn_gpu_buffer_write", -1, [&] {
    if (!buffer || bytes < 0 || (!host && bytes))
      return fail(-1, std::string("attn_gpu_buffer_write: buffer or host is "
                                  "NULL, or bytes < 0"));
    std::string error;
    if (!buffer->device->write(*buffer->buffer, host, uint64_t(bytes), error))
      return fail(-1, "attn_gpu_buffer_write: " + error);
    return 0;
  });
}

int attn_gpu_buffer_write_at(attn_gpu_buffer *buffer, int64_t offset,
                             const void *host, int64_t bytes) {
  return attnc::guarded<int>("attn_gpu_buffer_write_at", -1, [&] {
    if (!buffer || offset < 0 || bytes < 0 || (!host && bytes))
      return fail(-1, std::string("attn_gpu_buffer_write_at: buffer or host "
                                  "is NULL, or offset or bytes < 0"));
    std::string error;
    if (!buffer->device->writeAt(*buffer->buffer, uint64_t(offset), host,
                                 uint64_t(bytes), error))
      return fail(-1, "attn_gpu_buffer_write_at: " + error);
    return 0;
  });
}

int attn_gpu_buffer_read(attn_gpu_buffer *buffer, void *host, int64_t bytes) {
  return attnc::guarded<int>("attn_gpu_buffer_read", -1, [&] {
    if (!buffer || bytes < 0 || (!host && bytes))
      return fail(-1, std::string("attn_gpu_buffer_read: buffer or host is "
                                  "NULL, or bytes < 0"));
    std::string error;
    if (!buffer->device->read(*buffer->buffer, host, uint64_t(bytes), error))
      return fail(-1, "attn_gpu_buffer_read: " + error);
    return 0;
  });
}

void attn_gpu_buffer_release(attn_gpu_buffer *buffer) { delete buffer; }

attn_gpu_program *attn_gpu_program_load(attn_gpu_device *device,
                                        const char *codePath,
                                        const char *descriptorPath) {
  return attnc::guarded<attn_gpu_program *>(
      "attn_gpu_program_load", nullptr, [&]() -> attn_gpu_program * {
        if (!device || !codePath)
          return fail<attn_gpu_program *>(
              nullptr, "attn_gpu_program_load: device or code path is NULL");
        std::string code = codePath, json;
        if (descriptorPath) {
          json = descriptorPath;
        } else {
          size_t dot = code.find_last_of('.');
          size_t slash = code.find_last_of('/');
          json = (dot == std::string::npos ||
                          (slash != std::string::npos && dot < slash)
                      ? code
                      : code.substr(0, dot)) +
                 ".json";
        }
        auto program = std::make_unique<attn_gpu_program>();
        program->device = device->device;
        std::string text, descriptors, error;
        if (!readFile(code, text, error) || !readFile(json, descriptors, error))
          return fail<attn_gpu_program *>(nullptr, error);
        if (!parseGpuDescriptors(descriptors, program->program.kernels, error))
          return fail<attn_gpu_program *>(nullptr, json + ": " + error);
        program->program.isSpirv = endsWith(code, ".spv");
        if (program->program.isSpirv != device->device->runsSpirv())
          return fail<attn_gpu_program *>(
              nullptr, code + ": " +
                           (program->program.isSpirv
                                ? "SPIR-V runs on a Vulkan device"
                                : "PTX and cubins run on a CUDA device") +
                           ", not on '" + device->description + "'");
        if (program->program.isSpirv) {
          if (text.empty() || text.size() % 4)
            return fail<attn_gpu_program *>(nullptr,
                                            code + ": not SPIR-V words");
          program->program.spirv.resize(text.size() / 4);
          std::memcpy(program->program.spirv.data(), text.data(), text.size());
        } else {
          program->program.ptx = std::move(text);
        }
        return program.release();
      });
}

void attn_gpu_program_release(attn_gpu_program *program) { delete program; }

int64_t attn_gpu_operand_count(attn_gpu_program *program,
                               const char *function) {
  return attnc::guarded<int64_t>("attn_gpu_operand_count", -1, [&] {
    if (!program || !function)
      return fail<int64_t>(-1, "attn_gpu_operand_count: program or function "
                               "is NULL");
    std::lock_guard<std::mutex> lock(program->mutex);
    GpuFunction *f = preparedFunction(program, function);
    return f ? int64_t(f->operandBytes().size()) : -1;
  });
}

int64_t attn_gpu_operand_bytes(attn_gpu_program *program, const char *function,
                               int64_t index) {
  return attnc::guarded<int64_t>("attn_gpu_operand_bytes", -1, [&] {
    if (!program || !function)
      return fail<int64_t>(-1, "attn_gpu_operand_bytes: program or function "
                               "is NULL");
    std::lock_guard<std::mutex> lock(program->mutex);
    GpuFunction *f = preparedFunction(program, function);
    if (!f)
      return int64_t(-1);
    if (index < 0 || size_t(index) >= f->operandBytes().size())
      return fail<int64_t>(
          -1, "attn_gpu_operand_bytes: '" + std::string(function) + "' has " +
                  std::to_string(f->operandBytes().size()) +
                  " operands, no operand " + std::to_string(index));
    return int64_t(f->operandBytes()[index]);
  });
}

int attn_gpu_call(attn_gpu_program *program, const char *function,
                  attn_gpu_buffer *const *inputs, int64_t numInputs,
                  attn_gpu_buffer *const *outputs, int64_t numOutputs) {
  return attnc::guarded<int>("attn_gpu_call", -1, [&] {
    if (!program || !function)
      return fail(-1, std::string("attn_gpu_call: program or function is "
                                  "NULL"));
    if (numInputs < 0 || numOutputs < 0 ||
        numInputs + numOutputs > kMaxOperands || (numInputs && !inputs) ||
        (numOutputs && !outputs))
      return fail(-1, std::string("attn_gpu_call: bad operand arrays (at "
                                  "most 16 operands)"));
    std::lock_guard<std::mutex> lock(program->mutex);
    GpuFunction *f = preparedFunction(program, function);
    if (!f)
      return -1;
    int64_t expectedInputs = int64_t(f->numInputs());
    int64_t expectedOutputs =
        int64_t(f->operandBytes().size()) - expectedInputs;
    if (numInputs != expectedInputs || numOutputs != expectedOutputs)
      return fail(-1, "attn_gpu_call: '" + std::string(function) + "' takes " +
                          std::to_string(expectedInputs) + " inputs and " +
                          std::to_string(expectedOutputs) + " outputs, given " +
                          std::to_string(numInputs) + " and " +
                          std::to_string(numOutputs));
    std::vector<GpuOperand> operands;
    for (int64_t i = 0; i < numInputs + numOutputs; ++i) {
      attn_gpu_buffer *b = i < numInputs ? inputs[i] : outputs[i - numInputs];
      if (!b)
        return fail(-1,
                    "attn_gpu_call: operand " + std::to_string(i) + " is NULL");
      if (b->device != program->device)
        return fail(-1, "attn_gpu_call: operand " + std::to_string(i) +
                            " is a buffer of another device");
      GpuOperand operand;
      operand.buffer = b->buffer.get();
      operands.push_back(operand);
    }
    std::vector<double> milliseconds;
    std::string error;
    if (!f->call(operands, 1, &milliseconds, nullptr, error))
      return fail(-1, "attn_gpu_call: " + error);
    program->lastMilliseconds = milliseconds.empty() ? 0 : milliseconds[0];
    return 0;
  });
}

double attn_gpu_last_call_milliseconds(attn_gpu_program *program) {
  if (!program)
    return -1;
  std::lock_guard<std::mutex> lock(program->mutex);
  return program->lastMilliseconds;
}

} // extern "C"
