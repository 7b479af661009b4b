/*===- attn-c/Gpu.h - C API: GPU kernels on device buffers --------*- C -*-===*
 *
 * Runs the kernels of `attn-compile --target=vulkan|cuda-...` (cuda-sm80,
 * cuda-sm90, cuda-sm90a; the .spv or .ptx and the .json launch descriptors
 * next to it, docs/Gpu.md) on buffers that stay on the device between calls: inputs
 * are written once, outputs of one call are inputs of the next, and a
 * call copies nothing between host and device. Link with -lattn_c.
 *
 *   attn_gpu_device *dev = attn_gpu_device_open("vulkan");
 *   attn_gpu_program *p = attn_gpu_program_load(dev, "causal.spv", NULL);
 *   attn_gpu_buffer *q = attn_gpu_buffer_create(
 *       dev, attn_gpu_operand_bytes(p, "causal", 0));
 *   attn_gpu_buffer_write(q, host_q, attn_gpu_buffer_bytes(q));
 *   ... k, v, o ...
 *   attn_gpu_buffer *in[3] = {q, k, v};
 *   if (attn_gpu_call(p, "causal", in, 3, &o, 1) != 0)
 *     fprintf(stderr, "%s\n", attn_last_error());
 *   attn_gpu_buffer_read(o, host_o, attn_gpu_buffer_bytes(o));
 *
 * Operands are dense row-major tensors of the types and sizes the kernels
 * were compiled for; their sizes in bytes are checked (a buffer must hold
 * at least the kernel's operand), their contents are the caller's. Errors,
 * ownership and threading follow attn-c/Runtime.h: failing functions return
 * NULL or -1 and set attn_last_error(); every handle is released by its
 * *_release function, in any order (programs and buffers keep their
 * device). One program's calls may come from several threads; they take
 * turns.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_C_GPU_H
#define ATTN_C_GPU_H

#include "attn-c/Runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attn_gpu_device attn_gpu_device;
typedef struct attn_gpu_program attn_gpu_program;
typedef struct attn_gpu_buffer attn_gpu_buffer;

/** Opens a device: "vulkan" ($ATTN_VULKAN_DEVICE, else the first GPU,
 * else the first device, e.g. lavapipe) or "cuda" ($ATTN_CUDA_DEVICE,
 * default 0). NULL when there is none (the message says why). */
attn_gpu_device *attn_gpu_device_open(const char *kind);
/** The device's name and kind, e.g. "llvmpipe (LLVM 15.0.6, 256 bits),
 * cpu"; valid until the device is released. */
const char *attn_gpu_device_describe(attn_gpu_device *device);
void attn_gpu_device_release(attn_gpu_device *device);

/** `bytes` (>= 0) of zero-filled device memory. */
attn_gpu_buffer *attn_gpu_buffer_create(attn_gpu_device *device, int64_t bytes);
/** `bytes` of the caller's device memory, borrowed: on CUDA a CUdeviceptr
 * (e.g. a PyTorch tensor's data_ptr()) that must stay allocated while the
 * buffer is used; attn_gpu_buffer_release never frees it. Vulkan devices
 * refuse (a buffer of another VkDevice cannot be bound). */
attn_gpu_buffer *attn_gpu_buffer_wrap(attn_gpu_device *device,
                                      uint64_t device_pointer, int64_t bytes);
/** The buffer's size in bytes; -1 for NULL. */
int64_t attn_gpu_buffer_bytes(const attn_gpu_buffer *buffer);
/** Copies `bytes` (at most the buffer's) from host memory into the buffer,
 * or from the buffer into host memory. Returns 0, or -1 on error. */
int attn_gpu_buffer_write(attn_gpu_buffer *buffer, const void *host,
                          int64_t bytes);
int attn_gpu_buffer_read(attn_gpu_buffer *buffer, void *host, int64_t bytes);
/** Copies `bytes` from host memory into bytes [offset, offset + bytes) of
 * the buffer (within it), leaving the rest as it is: e.g. the rows a
 * decoding step appends to a paged KV cache kept on the device
 * (docs/Gpu.md, "Paged KV caches"). Returns 0, or -1 on error. */
int attn_gpu_buffer_write_at(attn_gpu_buffer *buffer, int64_t offset,
                             const void *host, int64_t bytes);
void attn_gpu_buffer_release(attn_gpu_buffer *buffer);

/** Loads the kernels of `code_path` (.spv for Vulkan, .ptx or a cubin for
 * CUDA: it must match the device) with their launch descriptors
 * `descriptor_path` (NULL: the code path with its extension replaced by
 * .json). */
attn_gpu_program *attn_gpu_program_load(attn_gpu_device *device,
                                        const char *code_path,
                                        const char *descriptor_path);
void attn_gpu_program_release(attn_gpu_program *program);
/** The operands `function` takes: its inputs, then its results; -1 when
 * the program has no such function. */
int64_t attn_gpu_operand_count(attn_gpu_program *program, const char *function);
/** Bytes of operand `index` (inputs first, then results); -1 on error. */
int64_t attn_gpu_operand_bytes(attn_gpu_program *program, const char *function,
                               int64_t index);
/** Runs `function`: the kernels read `inputs` and write `outputs`, all
 * buffers of the program's device, in the order of the function's
 * arguments and results. Split key tiles and their merge stay on the
 * device; the call returns when the kernels have ended. A function that
 * updates an argument in place (an insertion: docs/Gpu.md) has that
 * argument's buffer as its output too. Returns 0, or -1 on error. At most
 * 16 inputs and outputs together. */
int attn_gpu_call(attn_gpu_program *program, const char *function,
                  attn_gpu_buffer *const *inputs, int64_t num_inputs,
                  attn_gpu_buffer *const *outputs, int64_t num_outputs);
/** Milliseconds the device spent in the kernels of the program's last
 * call (timestamps or events); -1 before the first call. */
double attn_gpu_last_call_milliseconds(attn_gpu_program *program);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_C_GPU_H */
