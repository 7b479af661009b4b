/*===- attn-c/Runtime.h - C API of the attn runtime ----------------------===*
 *
 * Runs kernels that `attn-compile --emit=so` built, from any language with a
 * C FFI, without C++ or LLVM headers. Link with -lattn_c.
 *
 *   attn_artifact *a = attn_artifact_load("libcausal_gqa.so");
 *   int64_t shape[4] = {1, 8, 1024, 64};
 *   attn_tensor *q = attn_tensor_create(ATTN_F32, 4, shape);
 *   ... fill attn_tensor_data(q), k, v ...
 *   attn_tensor *in[3] = {q, k, v};
 *   attn_tensor *o = attn_tensor_create(ATTN_F32, 4, shape);
 *   if (attn_call(a, "causal_gqa", in, 3, &o, 1) != 0)
 *     fprintf(stderr, "%s\n", attn_last_error());
 *
 * Tensors are dense, row-major and 64-byte aligned. Every object a function
 * returns is owned by the caller and released with its *_release function.
 * Functions that fail return NULL (or a negative value) and set a message
 * that attn_last_error() returns until the next failing call on the same
 * thread. No C++ exception crosses this API and no argument a caller can
 * pass crashes it (out of memory is an error too); the caller's contract is
 * what the API cannot see: buffers at least as large as their tensors say,
 * handles not used after their release, one stack per thread at a time
 * (docs/Hardening.md, "What the C API promises").
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTN_C_RUNTIME_H
#define ATTN_C_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Element types of kernel operands: f32, f16 or bf16 for Q, K, V and
 * results (IEEE binary16 and bfloat16 are stored as their 16-bit patterns,
 * uint16_t), i32 for segment (document) ids, bool (one byte, 0 or 1: i1 in
 * attn IR) for dense masks. Kernels of this release take
 * and write f32; artifacts state what they take in their signature. */
typedef int32_t attn_dtype;
enum { ATTN_F32 = 0, ATTN_I32 = 1, ATTN_F16 = 2, ATTN_BF16 = 3, ATTN_BOOL = 4 };
/* An integer, not an enum type: a caller may pass any value and the library
 * refuses the unknown ones (an out-of-range C++ enum value is undefined). */

typedef struct attn_artifact attn_artifact;
typedef struct attn_tensor attn_tensor;

/** Loads a shared library built by attn-compile --emit=so; NULL on error. */
attn_artifact *attn_artifact_load(const char *path);
/** Forgets the artifact (the library itself stays loaded in the process).
 * Stacks made from it keep it until they are released. */
void attn_artifact_release(attn_artifact *artifact);
/** The signature `function` of the artifact exports (docs/Runtime.md,
 * "Artifacts"), e.g. "f32[1,4,37,40] f32[1,2,100,40] f32[1,2,100,40] ->
 * f32[1,4,37,40]"; NULL when the artifact has no such function or exports
 * none for it. The text lives as long as the library. */
const char *attn_artifact_signature(attn_artifact *artifact,
                                    const char *function);

/** Bytes per element of `dtype` (4, 2 or 1); -1 for an unknown dtype. */
int64_t attn_dtype_size(attn_dtype dtype);

/** A zero-filled tensor of `rank` (1 to 8) sizes (each >= 0); NULL on
 * error. */
attn_tensor *attn_tensor_create(attn_dtype dtype, int64_t rank,
                                const int64_t *sizes);
void attn_tensor_release(attn_tensor *tensor);
/** A tensor over the caller's memory, for calls without copies (the Python
 * package passes NumPy and PyTorch buffers this way): `data` holds the
 * product of `sizes` elements, dense and row-major, and must stay valid
 * while the tensor is used. attn_tensor_release frees the handle, never
 * `data`. NULL on error (as attn_tensor_create, and for a NULL `data` with
 * elements). */
attn_tensor *attn_tensor_wrap(attn_dtype dtype, int64_t rank,
                              const int64_t *sizes, void *data);
/** The elements (float, int32_t or uint16_t per dtype), row-major. */
void *attn_tensor_data(attn_tensor *tensor);
attn_dtype attn_tensor_dtype(const attn_tensor *tensor);
int64_t attn_tensor_rank(const attn_tensor *tensor);
/** Size of dimension `dim`; -1 when out of range. */
int64_t attn_tensor_size(const attn_tensor *tensor, int64_t dim);

/** Calls `function` of the artifact (a function of the compiled module,
 * e.g. the spec's name) destination-passing style: the kernel reads
 * `inputs`, in the order of its arguments, and writes each result into the
 * tensor of `outputs` the caller created for it (the kernel allocates
 * nothing; the caller owns every tensor). Returns 0, or -1 on error. At most
 * 16 inputs and outputs together.
 * Artifacts of attn-compile export their signature
 * (`_attn_signature_<function>`): the number of inputs and outputs, their
 * element types, ranks and static sizes are checked against it before the
 * kernel runs (dynamic sizes only by rank). Libraries without one are
 * called as given. */
int attn_call(attn_artifact *artifact, const char *function,
              attn_tensor *const *inputs, int64_t num_inputs,
              attn_tensor *const *outputs, int64_t num_outputs);

/** attn_call with a result tensor it creates: of rank `result_rank` (4 for
 * attention, 3 for attn.fourier_mix), the element type and the static
 * sizes the artifact's signature gives. NULL on error, and for functions
 * with more than one result, dynamic result sizes or no signature (create
 * the outputs and call attn_call). */
attn_tensor *attn_run(attn_artifact *artifact, const char *function,
                      attn_tensor *const *inputs, int64_t num_inputs,
                      int64_t result_rank);

/** A stack of Transformer layers (docs/Transformer.md) from an artifact of
 * `attn-compile LAYER.yaml --emit=so`: the artifact holds the attention
 * kernels and the layer's description, the caller gives the weights, f32
 * tensors by the names of docs/Transformer.md, "Weights"
 * ("layers.0.self_attn.q_proj.weight", ...). They are copied; the stack
 * keeps the artifact (releasing the artifact first is safe). NULL on error:
 * a missing weight, a wrong shape, a NaN or infinite value (or one a 16-bit
 * layer rounds to infinity) and a weight the layer does not read are named;
 * a manifest that breaks a layer spec's rules is refused. Projections and
 * feed-forward run on the artifact's own GEMM kernels. */
typedef struct attn_stack attn_stack;
attn_stack *attn_stack_create(attn_artifact *artifact,
                              const char *const *weight_names,
                              attn_tensor *const *weights,
                              int64_t num_weights);
/** attn_stack_create with the weights of a safetensors file (F32, F16,
 * BF16 or F64 tensors, read as f32), validated before anything is read. */
attn_stack *attn_stack_load(attn_artifact *artifact, const char *weights_path);
/** Runs the stack on `x` [batch, length, d_model] (f32) into `out`, a
 * tensor of the same shape the caller created. `memory` is the encoder
 * output [batch, M, d_model] a decoder's cross-attention reads (kept until
 * attn_stack_reset; a memory given again mid-sequence replaces the kept
 * one from that call on), or NULL. An encoder sees `x` alone; a decoder
 * continues its sequence (its KV cache) until attn_stack_reset, and every
 * call of a sequence must have the batch of its first (another batch is
 * an error until the reset). A call whose buffers exceed the memory this
 * process can still allocate is refused before it starts. Returns 0, or -1
 * on error. */
int attn_stack_forward(attn_stack *stack, attn_tensor *x, attn_tensor *memory,
                       attn_tensor *out);
/** Variable-length batches, packed (FlashAttention's varlen layout): `x`
 * [total, d_model] (f32) holds the tokens of `count` sequences of
 * `lengths` one after the other, total = the sum of the lengths; `out`
 * gets the same shape. Products run on all the rows at once, positions
 * restart at each sequence and each sequence attends to its own tokens
 * only: each sequence's rows equal running it alone. A whole pass: a
 * decoder must have no sequence in progress and keeps no KV cache from it;
 * stacks with cross-attention or Transformer-XL memory refuse it. Returns
 * 0, or -1 on error. */
int attn_stack_forward_packed(attn_stack *stack, attn_tensor *x,
                              const int64_t *lengths, int64_t count,
                              attn_tensor *out);
/** Variable-length batches, padded: `x` [batch, length, d_model] (f32)
 * holds sequence b's lengths[b] (1..length) tokens in its first rows,
 * padding after them; `out` gets the same shape. The tokens run packed
 * (attn_stack_forward_packed): padding takes no work and never reaches an
 * output (NaN there is harmless), and padding rows of `out` are 0. Returns
 * 0, or -1 on error. */
int attn_stack_forward_padded(attn_stack *stack, attn_tensor *x,
                              const int64_t *lengths, attn_tensor *out);
/** Continuous batching (docs/Transformer.md, "Serving"): a decoder stack
 * (attention kind softmax, no cross-attention or Transformer-XL memory)
 * keeps live sequences, each with its own KV cache and position, apart
 * from attn_stack_forward's sequence in progress.
 * attn_stack_add_sequence starts one and returns its id (>= 0; ids are
 * never reused), or -1 on error; attn_stack_remove_sequence ends it and
 * frees its cache (0, or -1 for an unknown id). */
int64_t attn_stack_add_sequence(attn_stack *stack);
int attn_stack_remove_sequence(attn_stack *stack, int64_t id);
/** One step over `count` live sequences: `x` [total, d_model] (f32) holds
 * lengths[i] new tokens of sequence ids[i], one sequence after the other
 * (whole prompts, chunks of them and single decode tokens mixed); `out`
 * gets the same shape. Each sequence's tokens continue its positions and
 * attend to its cache and its earlier tokens of the step: each output
 * equals decoding that sequence alone. Unknown or repeated ids, lengths
 * that do not add up to `total`, or a sequence passing its capacity are
 * errors, and a failed step leaves every sequence as it was. Returns 0,
 * or -1 on error. */
int attn_stack_step(attn_stack *stack, const int64_t *ids,
                    const int64_t *lengths, int64_t count, attn_tensor *x,
                    attn_tensor *out);
/** Tokens live sequence `id` holds, or -1 (with an error) when none. */
int64_t attn_stack_sequence_length(attn_stack *stack, int64_t id);
/** Limits attn_stack_add_sequence and attn_stack_step enforce (0: none):
 * live sequences, and tokens one sequence may hold. Returns 0, or -1 on
 * negative limits. */
int attn_stack_set_serving_limits(attn_stack *stack, int64_t max_sequences,
                                  int64_t max_sequence_tokens);
/** Starts a new sequence: empties the KV cache and the memory (not the
 * live sequences of continuous batching). */
void attn_stack_reset(attn_stack *stack);
void attn_stack_release(attn_stack *stack);

/** Fills out[features * dim] with Performer's orthogonal random features
 * (blocks of `dim` orthogonal rows, each scaled to the norm of a Gaussian
 * vector), reproducible from `seed`: the omega operand of FAVOR+ and RFA
 * kernels. Returns 0, or -1 on bad arguments. */
int attn_orthogonal_random_features(int64_t features, int64_t dim,
                                    uint64_t seed, float *out);

/** The message of this thread's last failed call ("" when none). */
const char *attn_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_C_RUNTIME_H */
