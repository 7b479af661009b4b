//===- AttnModule.cpp - the attn._attn Python extension -------------------===//
//
// Artifacts of attn-compile called on NumPy arrays and PyTorch tensors
// without copies: each array is passed to the C API (attn-c/Runtime.h) as a
// tensor over its own memory (attn_tensor_wrap), so the kernel reads the
// caller's inputs and writes the caller's outputs in place. The C API checks
// every call against the signature the artifact exports; its messages
// become Python exceptions.
//
//===----------------------------------------------------------------------===//

#include "attn-c/Runtime.h"
#include "attn/Runtime/Gpu.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;

namespace {

using Array = nb::ndarray<nb::ro>;

/// The C API's dtype of `array`; -1 for one it does not carry.
attn_dtype dtypeOf(const Array &array) {
  nb::dlpack::dtype t = array.dtype();
  if (t.lanes != 1)
    return -1;
  if (t.code == uint8_t(nb::dlpack::dtype_code::Float) && t.bits == 32)
    return ATTN_F32;
  if (t.code == uint8_t(nb::dlpack::dtype_code::Float) && t.bits == 16)
    return ATTN_F16;
  if (t.code == uint8_t(nb::dlpack::dtype_code::Bfloat) && t.bits == 16)
    return ATTN_BF16;
  if (t.code == uint8_t(nb::dlpack::dtype_code::Int) && t.bits == 32)
    return ATTN_I32;
  if (t.code == uint8_t(nb::dlpack::dtype_code::Bool) && t.bits == 8)
    return ATTN_BOOL;
  return -1;
}

/// "f32[1,8,1024,64]" for messages.
std::string describe(const Array &array) {
  nb::dlpack::dtype t = array.dtype();
  std::string text = "dtype code " + std::to_string(t.code) + " bits " +
                     std::to_string(t.bits) + " [";
  for (size_t d = 0; d < array.ndim(); ++d)
    text += (d ? "," : "") + std::to_string(array.shape(d));
  return text + "]";
}

/// Whether `array` is dense and row-major (size-1 dimensions may have any
/// stride), the layout kernels read.
bool isRowMajor(const Array &array) {
  int64_t expected = 1;
  for (size_t d = array.ndim(); d-- > 0;) {
    if (array.shape(d) != 1 && array.stride(d) != expected)
      return false;
    expected *= int64_t(array.shape(d));
  }
  return true;
}

/// Owns C API tensors for the duration of one call.
struct WrappedTensors {
  std::vector<attn_tensor *> tensors;
  ~WrappedTensors() {
    for (attn_tensor *t : tensors)
      attn_tensor_release(t);
  }
};

/// Wraps each array of `arrays` (`role` and its index, counted from
/// `first`, name it in messages).
void wrapAll(const std::vector<Array> &arrays, const char *role,
             WrappedTensors &out, size_t first = 0) {
  for (size_t i = 0; i < arrays.size(); ++i) {
    const Array &a = arrays[i];
    std::string which = std::string(role) + " " + std::to_string(first + i);
    if (a.device_type() != nb::device::cpu::value)
      throw nb::value_error((which + " is not in CPU memory (attn's CPU "
                                     "kernels read host memory)")
                                .c_str());
    attn_dtype dtype = dtypeOf(a);
    if (dtype < 0)
      throw nb::type_error((which + " has an element type attn does not "
                                    "take: " + describe(a) +
                            " (float32, float16, bfloat16, int32, bool)")
                               .c_str());
    if (!isRowMajor(a))
      throw nb::value_error(
          (which + " is not dense row-major (make it contiguous)").c_str());
    std::vector<int64_t> sizes(a.ndim());
    for (size_t d = 0; d < a.ndim(); ++d)
      sizes[d] = int64_t(a.shape(d));
    attn_tensor *t = attn_tensor_wrap(dtype, int64_t(sizes.size()),
                                      sizes.data(), const_cast<void *>(a.data()));
    if (!t)
      throw nb::value_error((which + ": " + attn_last_error()).c_str());
    out.tensors.push_back(t);
  }
}

/// A dense row-major buffer: (address, C API dtype, sizes).
using Buffer = std::tuple<uintptr_t, attn_dtype, std::vector<int64_t>>;

/// A shared library of attn-compile, loaded once.
class Artifact {
public:
  explicit Artifact(const std::string &path)
      : artifact(attn_artifact_load(path.c_str())) {
    if (!artifact)
      throw std::runtime_error(attn_last_error());
  }
  ~Artifact() { attn_artifact_release(artifact); }
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  nb::object signature(const std::string &function) const {
    const char *text = attn_artifact_signature(artifact, function.c_str());
    if (!text)
      return nb::none();
    return nb::str(text);
  }

  /// Runs `function` on `inputs`, writing `outputs` in place.
  void call(const std::string &function, const std::vector<Array> &inputs,
            const std::vector<Array> &outputs) {
    WrappedTensors in, out;
    wrapAll(inputs, "input", in);
    wrapAll(outputs, "output", out);
    run(function, in, out);
  }

  /// `call` for operands given as (address, C API dtype, sizes) of dense
  /// row-major buffers the caller keeps alive: PyTorch tensors without the
  /// DLPack round trip (~2 us a tensor), for the per-call overhead.
  void callBuffers(const std::string &function, const std::vector<Buffer> &inputs,
                   const std::vector<Buffer> &outputs) {
    WrappedTensors in, out;
    wrapBuffers(inputs, "input", in);
    wrapBuffers(outputs, "output", out);
    run(function, in, out);
  }

private:
  /// attn_call with the GIL released: the kernel runs on its own OpenMP
  /// threads, and other Python threads go on meanwhile.
  void run(const std::string &function, WrappedTensors &in,
           WrappedTensors &out) {
    int status;
    {
      nb::gil_scoped_release release;
      status = attn_call(artifact, function.c_str(), in.tensors.data(),
                         int64_t(in.tensors.size()), out.tensors.data(),
                         int64_t(out.tensors.size()));
    }
    if (status != 0)
      throw nb::value_error(attn_last_error());
  }

  static void wrapBuffers(const std::vector<Buffer> &buffers, const char *role,
                          WrappedTensors &out) {
    for (size_t i = 0; i < buffers.size(); ++i) {
      const auto &[address, dtype, sizes] = buffers[i];
      attn_tensor *t =
          attn_tensor_wrap(dtype, int64_t(sizes.size()), sizes.data(),
                           reinterpret_cast<void *>(address));
      if (!t)
        throw nb::value_error((std::string(role) + " " + std::to_string(i) +
                               ": " + attn_last_error())
                                  .c_str());
      out.tensors.push_back(t);
    }
  }

  attn_artifact *artifact;
  friend class Stack;
};

/// A layer stack of a layer artifact (attn_stack_*): weights copied in at
/// creation, forward calls in place. Python keeps the artifact alive for
/// as long as the stack (keep_alive below), as the C API asks.
class Stack {
public:
  Stack(Artifact &artifact, const std::vector<std::string> &names,
        const std::vector<Array> &weights) {
    if (names.size() != weights.size())
      throw nb::value_error("one name per weight");
    WrappedTensors tensors;
    wrapAll(weights, "weight", tensors);
    std::vector<const char *> cNames;
    for (const std::string &name : names)
      cNames.push_back(name.c_str());
    for (size_t i = 0; i < weights.size(); ++i)
      if (attn_tensor_dtype(tensors.tensors[i]) != ATTN_F32)
        throw nb::type_error(("weight " + names[i] + " must be float32").c_str());
    {
      nb::gil_scoped_release release;
      stack = attn_stack_create(artifact.artifact, cNames.data(),
                                tensors.tensors.data(),
                                int64_t(tensors.tensors.size()));
    }
    if (!stack)
      throw nb::value_error(attn_last_error());
  }
  ~Stack() { attn_stack_release(stack); }
  Stack(const Stack &) = delete;
  Stack &operator=(const Stack &) = delete;

  void forward(const Array &x, nb::object memory, const Array &out) {
    WrappedTensors tensors;
    std::vector<Array> arrays = {x, out};
    if (!memory.is_none())
      arrays.push_back(nb::cast<Array>(memory));
    wrapAll(arrays, "operand", tensors);
    attn_tensor *memoryTensor =
        memory.is_none() ? nullptr : tensors.tensors[2];
    int status;
    {
      nb::gil_scoped_release release;
      status = attn_stack_forward(stack, tensors.tensors[0], memoryTensor,
                                  tensors.tensors[1]);
    }
    if (status != 0)
      throw nb::value_error(attn_last_error());
  }

  void forwardPacked(const Array &x, const std::vector<int64_t> &lengths,
                     const Array &out) {
    WrappedTensors tensors;
    wrapAll({x, out}, "operand", tensors);
    int status;
    {
      nb::gil_scoped_release release;
      status = attn_stack_forward_packed(stack, tensors.tensors[0],
                                         lengths.data(),
                                         int64_t(lengths.size()),
                                         tensors.tensors[1]);
    }
    if (status != 0)
      throw nb::value_error(attn_last_error());
  }

  void forwardPadded(const Array &x, const std::vector<int64_t> &lengths,
                     const Array &out) {
    WrappedTensors tensors;
    wrapAll({x, out}, "operand", tensors);
    if (int64_t(lengths.size()) != attn_tensor_size(tensors.tensors[0], 0))
      throw nb::value_error("one length per sequence of x [batch, length, "
                            "d_model]");
    int status;
    {
      nb::gil_scoped_release release;
      status = attn_stack_forward_padded(stack, tensors.tensors[0],
                                         lengths.data(), tensors.tensors[1]);
    }
    if (status != 0)
      throw nb::value_error(attn_last_error());
  }

  int64_t addSequence() {
    int64_t id = attn_stack_add_sequence(stack);
    if (id < 0)
      throw nb::value_error(attn_last_error());
    return id;
  }

  void removeSequence(int64_t id) {
    if (attn_stack_remove_sequence(stack, id) != 0)
      throw nb::value_error(attn_last_error());
  }

  void step(const std::vector<int64_t> &ids, const Array &x,
            const std::vector<int64_t> &lengths, const Array &out) {
    if (ids.size() != lengths.size())
      throw nb::value_error("one length per sequence id");
    WrappedTensors tensors;
    wrapAll({x, out}, "operand", tensors);
    int status;
    {
      nb::gil_scoped_release release;
      status = attn_stack_step(stack, ids.data(), lengths.data(),
                               int64_t(ids.size()), tensors.tensors[0],
                               tensors.tensors[1]);
    }
    if (status != 0)
      throw nb::value_error(attn_last_error());
  }

  int64_t sequenceLength(int64_t id) {
    int64_t length = attn_stack_sequence_length(stack, id);
    if (length < 0)
      throw nb::value_error(attn_last_error());
    return length;
  }

  void reset() { attn_stack_reset(stack); }

private:
  attn_stack *stack = nullptr;
};

/// The process's device of type `Device` (attnrt::VulkanDevice or
/// CudaDevice), opened on first use: instance and context creation cost
/// tens of milliseconds, and lavapipe stands in for a GPU without one.
/// The process's Vulkan or CUDA device, kept open once used.
attnrt::GpuDevice *processDevice(bool spirv) {
  static std::mutex mutex;
  static std::shared_ptr<attnrt::GpuDevice> devices[2];
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<attnrt::GpuDevice> &device = devices[spirv];
  if (!device) {
    std::string error;
    device = attnrt::sharedGpuDevice(spirv, error);
    if (!device)
      throw std::runtime_error(std::string("no ") +
                               (spirv ? "Vulkan" : "CUDA") +
                               " device: " + error);
  }
  return device.get();
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Memory on a GPU artifact's device that stays there between calls
/// (attn.DeviceArray holds one).
struct DeviceBuffer {
  std::shared_ptr<attnrt::GpuBuffer> buffer;
  attnrt::GpuDevice *device;

  uint64_t nbytes() const { return buffer->bytes(); }
  /// Copies a host array of exactly the buffer's size in.
  void write(const Array &host) {
    WrappedTensors checked;
    wrapAll({host}, "host array", checked);
    transfer(host.nbytes(), [&](std::string &error) {
      return device->write(*buffer, host.data(), host.nbytes(), error);
    });
  }
  /// Copies the buffer out into a host array of exactly its size.
  void read(nb::ndarray<> host) {
    WrappedTensors checked;
    wrapAll({Array(host)}, "host array", checked);
    transfer(host.nbytes(), [&](std::string &error) {
      return device->read(*buffer, host.data(), host.nbytes(), error);
    });
  }

private:
  template <typename Copy> void transfer(size_t bytes, Copy copy) {
    if (bytes != buffer->bytes())
      throw nb::value_error(("the host array has " + std::to_string(bytes) +
                             " bytes, the device buffer " +
                             std::to_string(buffer->bytes()))
                                .c_str());
    std::string error;
    if (!copy(error))
      throw nb::value_error(error.c_str());
  }
};

/// A GPU artifact of `attn-compile --target=vulkan|cuda-...`: the .spv or
/// .ptx / .cubin code and the .json launch descriptors next to it. Calls
/// bind host arrays to the kernels' buffers (checked against the sizes the
/// descriptors give) and copy the results back.
class GpuArtifact {
public:
  GpuArtifact(const std::string &codePath, const std::string &descriptorPath) {
    std::string error;
    if (!attnrt::parseGpuDescriptors(readFile(descriptorPath), program.kernels,
                                     error))
      throw std::runtime_error(descriptorPath + ": " + error);
    std::string code = readFile(codePath);
    program.isSpirv = codePath.size() > 4 &&
                      codePath.compare(codePath.size() - 4, 4, ".spv") == 0;
    if (program.isSpirv) {
      if (code.size() % 4)
        throw std::runtime_error(codePath + ": not SPIR-V words");
      program.spirv.resize(code.size() / 4);
      std::memcpy(program.spirv.data(), code.data(), code.size());
    } else {
      program.ptx = std::move(code);
    }
  }

  std::string device() {
    return processDevice(program.isSpirv)->describe();
  }

  /// Zero-filled memory on the artifact's device.
  DeviceBuffer allocate(uint64_t bytes) {
    attnrt::GpuDevice *device = processDevice(program.isSpirv);
    std::string error;
    std::shared_ptr<attnrt::GpuBuffer> buffer = device->allocate(bytes, error);
    if (!buffer)
      throw nb::value_error(error.c_str());
    return DeviceBuffer{std::move(buffer), device};
  }

  /// Operands are DeviceBuffers (bound in place), arrays in CUDA memory
  /// for a CUDA artifact (borrowed in place), or host arrays (copied in,
  /// results copied back).
  void call(const std::string &function, const std::vector<nb::object> &inputs,
            const std::vector<nb::object> &outputs) {
    attnrt::GpuDevice *device = processDevice(program.isSpirv);
    std::vector<attnrt::GpuOperand> operands;
    std::vector<std::shared_ptr<attnrt::GpuBuffer>> borrowed;
    std::vector<Array> hostArrays; // keeps the host views alive
    auto add = [&](const std::vector<nb::object> &objects, const char *role) {
      for (size_t i = 0; i < objects.size(); ++i) {
        std::string which = std::string(role) + " " + std::to_string(i);
        attnrt::GpuOperand operand;
        if (nb::isinstance<DeviceBuffer>(objects[i])) {
          DeviceBuffer &b = nb::cast<DeviceBuffer &>(objects[i]);
          if (b.device != device)
            throw nb::value_error(
                (which + " is memory of another device").c_str());
          operand.buffer = b.buffer.get();
          operands.push_back(operand);
          continue;
        }
        Array a = nb::cast<Array>(objects[i]);
        if (a.device_type() == nb::device::cuda::value && !program.isSpirv) {
          if (dtypeOf(a) < 0 || !isRowMajor(a))
            throw nb::value_error(
                (which + " must be dense row-major float32, float16, "
                         "bfloat16, int32 or bool")
                    .c_str());
          std::string error;
          auto buffer = device->wrap(uint64_t(uintptr_t(a.data())),
                                     uint64_t(a.nbytes()), error);
          if (!buffer)
            throw nb::value_error((which + ": " + error).c_str());
          operand.buffer = buffer.get();
          borrowed.push_back(std::move(buffer));
          operands.push_back(operand);
          continue;
        }
        WrappedTensors checked; // the C API's checks of dtype and layout
        wrapAll({a}, role, checked, i);
        operand.data = const_cast<void *>(a.data());
        operand.bytes = uint64_t(a.nbytes());
        operands.push_back(operand);
        hostArrays.push_back(std::move(a));
      }
    };
    add(inputs, "input");
    add(outputs, "output");
    std::string error;
    bool ran;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mutex);
      attnrt::GpuFunction *ready = nullptr;
      for (auto &[name, f] : prepared)
        if (name == function)
          ready = f.get();
      if (!ready) {
        auto f = attnrt::GpuFunction::prepare(program, *device, function, error);
        if (f)
          ready = prepared.emplace_back(function, std::move(f)).second.get();
      }
      ran = ready && ready->call(operands, /*repeats=*/1, nullptr, nullptr,
                                 error);
    }
    if (!ran)
      throw nb::value_error(error.c_str());
  }

private:
  attnrt::GpuProgram program;
  /// The functions called so far, ready on the device; calls from several
  /// threads take turns (a function's staging buffers are its own).
  std::mutex mutex;
  std::vector<std::pair<std::string, std::unique_ptr<attnrt::GpuFunction>>>
      prepared;
};

} // namespace

NB_MODULE(_attn, m) {
  m.doc() = "attn's runtime: artifacts of attn-compile, called in place";
  nb::class_<Artifact>(m, "Artifact")
      .def(nb::init<const std::string &>(), nb::arg("path"),
           "Loads a shared library built by attn-compile --emit=so.")
      .def("signature", &Artifact::signature, nb::arg("function"),
           "The operand types the function takes and returns, or None.")
      .def("call", &Artifact::call, nb::arg("function"), nb::arg("inputs"),
           nb::arg("outputs"),
           "Runs the function destination-passing style: reads the input "
           "arrays, writes the output arrays in place (no copies).")
      .def("call_buffers", &Artifact::callBuffers, nb::arg("function"),
           nb::arg("inputs"), nb::arg("outputs"),
           "call() on (address, dtype, sizes) of dense row-major buffers "
           "the caller keeps alive (dtype: 0 f32, 1 i32, 2 f16, 3 bf16, 4 "
           "bool).");
  nb::class_<Stack>(m, "Stack")
      .def(nb::init<Artifact &, const std::vector<std::string> &,
                    const std::vector<Array> &>(),
           nb::arg("artifact"), nb::arg("names"), nb::arg("weights"),
           nb::keep_alive<1, 2>(),
           "A layer stack of a layer artifact, with float32 weights by the "
           "names of docs/Transformer.md (copied in).")
      .def("forward", &Stack::forward, nb::arg("x"), nb::arg("memory").none(),
           nb::arg("out"),
           "Runs the stack on x [batch, length, d_model] into out; a decoder "
           "continues its sequence (KV cache) until reset().")
      .def("forward_packed", &Stack::forwardPacked, nb::arg("x"),
           nb::arg("lengths"), nb::arg("out"),
           "Runs sequences of `lengths` packed in x [total, d_model] into "
           "out, each as if alone (attn_stack_forward_packed).")
      .def("forward_padded", &Stack::forwardPadded, nb::arg("x"),
           nb::arg("lengths"), nb::arg("out"),
           "Runs sequences padded in x [batch, length, d_model], lengths[b] "
           "tokens first in row b, into out (padding rows 0; "
           "attn_stack_forward_padded).")
      .def("add_sequence", &Stack::addSequence,
           "Continuous batching: starts a live sequence, returns its id.")
      .def("remove_sequence", &Stack::removeSequence, nb::arg("id"),
           "Ends live sequence `id` and frees its cache.")
      .def("step", &Stack::step, nb::arg("ids"), nb::arg("x"),
           nb::arg("lengths"), nb::arg("out"),
           "One step: lengths[i] new tokens of sequence ids[i], packed in x "
           "[total, d_model], into out (attn_stack_step).")
      .def("sequence_length", &Stack::sequenceLength, nb::arg("id"),
           "Tokens live sequence `id` holds.")
      .def("reset", &Stack::reset, "Starts a new sequence.");
  nb::class_<GpuArtifact>(m, "GpuArtifact")
      .def(nb::init<const std::string &, const std::string &>(),
           nb::arg("code"), nb::arg("descriptors"),
           "Loads a GPU artifact: .spv (Vulkan) or .ptx / .cubin (CUDA) and "
           "its .json launch descriptors.")
      .def("device", &GpuArtifact::device,
           "The device the artifact runs on (opened on first use).")
      .def("allocate", &GpuArtifact::allocate, nb::arg("nbytes"),
           "Zero-filled memory on the artifact's device.")
      .def("call", &GpuArtifact::call, nb::arg("function"), nb::arg("inputs"),
           nb::arg("outputs"),
           "Runs the function on the GPU. Operands: DeviceBuffers (used in "
           "place), arrays in CUDA memory for a CUDA artifact (borrowed in "
           "place), or host arrays (inputs copied to the device, results "
           "back).");
  nb::class_<DeviceBuffer>(m, "DeviceBuffer")
      .def_prop_ro("nbytes", &DeviceBuffer::nbytes)
      .def("write", &DeviceBuffer::write, nb::arg("host"),
           "Copies a host array of the buffer's size to the device.")
      .def("read", &DeviceBuffer::read, nb::arg("host"),
           "Copies the buffer into a host array of its size.");
}
