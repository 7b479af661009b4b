/* Variable-length batches through a layer artifact (attn_stack_*): the
 * sequences of the given lengths packed in one input [total, d_model] in
 * one attn_stack_forward_packed call, against each sequence run alone by
 * attn_stack_forward. Packing changes which rows share a product, not any
 * sum, so each sequence's rows must match its own run within f32's
 * rounding.
 *
 *   stack-packed LIB.so WEIGHTS.safetensors D_MODEL LENGTH...
 *
 * Prints "packed: ... max |packed - alone| / max |alone| = E: SAME" (E <=
 * 1e-5) or DIFFERENT (exit 1), then the answers to calls the API must
 * refuse. */
#include "attn-c/Runtime.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s LIB.so WEIGHTS D_MODEL LENGTH...\n", argv[0]);
    return 2;
  }
  int64_t width = atoll(argv[3]), count = argc - 4, total = 0;
  int64_t *lengths = malloc(sizeof(int64_t) * count);
  for (int64_t s = 0; s < count; ++s)
    total += lengths[s] = atoll(argv[4 + s]);
  attn_artifact *artifact = attn_artifact_load(argv[1]);
  attn_stack *stack = artifact ? attn_stack_load(artifact, argv[2]) : NULL;
  if (!stack) {
    printf("stack: %s\n", attn_last_error());
    return 1;
  }
  int64_t shape[2] = {total, width};
  attn_tensor *x = attn_tensor_create(ATTN_F32, 2, shape);
  attn_tensor *out = attn_tensor_create(ATTN_F32, 2, shape);
  float *values = (float *)attn_tensor_data(x);
  for (int64_t i = 0; i < total * width; ++i)
    values[i] = (float)(sin(0.37 * (double)i) + 0.1 * cos(3.1 * (double)i));
  if (attn_stack_forward_packed(stack, x, lengths, count, out) != 0) {
    printf("packed: %s\n", attn_last_error());
    return 1;
  }
  const float *packed = (const float *)attn_tensor_data(out);
  double worst = 0, largest = 0;
  for (int64_t s = 0, first = 0; s < count; first += lengths[s++]) {
    int64_t oneShape[3] = {1, lengths[s], width};
    attn_tensor *one = attn_tensor_create(ATTN_F32, 3, oneShape);
    attn_tensor *oneOut = attn_tensor_create(ATTN_F32, 3, oneShape);
    memcpy(attn_tensor_data(one), values + first * width,
           sizeof(float) * lengths[s] * width);
    attn_stack_reset(stack);
    if (attn_stack_forward(stack, one, NULL, oneOut) != 0) {
      printf("alone: %s\n", attn_last_error());
      return 1;
    }
    const float *alone = (const float *)attn_tensor_data(oneOut);
    for (int64_t i = 0; i < lengths[s] * width; ++i) {
      double diff = fabs((double)packed[first * width + i] - alone[i]);
      worst = isnan(diff) ? INFINITY : diff > worst ? diff : worst;
      largest = fabs(alone[i]) > largest ? fabs(alone[i]) : largest;
    }
    attn_tensor_release(one);
    attn_tensor_release(oneOut);
  }
  double error = worst / largest;
  int same = error <= 1e-5;
  printf("packed: %lld sequences, %lld tokens, max |packed - alone| / max "
         "|alone| = %.2e: %s\n",
         (long long)count, (long long)total, error,
         same ? "SAME" : "DIFFERENT");

  /* The same sequences padded to the longest, NaN in the padding
   * (attn_stack_forward_padded): their rows must equal the packed call's,
   * the padding's output rows must be 0. */
  int64_t longest = 0;
  for (int64_t s = 0; s < count; ++s)
    longest = lengths[s] > longest ? lengths[s] : longest;
  int64_t paddedShape[3] = {count, longest, width};
  attn_tensor *px = attn_tensor_create(ATTN_F32, 3, paddedShape);
  attn_tensor *pout = attn_tensor_create(ATTN_F32, 3, paddedShape);
  float *pv = (float *)attn_tensor_data(px);
  for (int64_t i = 0; i < count * longest * width; ++i)
    pv[i] = NAN;
  for (int64_t s = 0, first = 0; s < count; first += lengths[s++])
    memcpy(pv + s * longest * width, values + first * width,
           sizeof(float) * lengths[s] * width);
  attn_stack_reset(stack);
  if (attn_stack_forward_padded(stack, px, lengths, pout) != 0) {
    printf("padded: %s\n", attn_last_error());
    return 1;
  }
  const float *po = (const float *)attn_tensor_data(pout);
  double paddedWorst = 0;
  int64_t leaked = 0;
  for (int64_t s = 0, first = 0; s < count; first += lengths[s++])
    for (int64_t i = 0; i < longest * width; ++i) {
      float y = po[s * longest * width + i];
      if (i >= lengths[s] * width) {
        leaked += y != 0;
        continue;
      }
      double diff = fabs((double)y - packed[first * width + i]);
      paddedWorst = isnan(diff)          ? INFINITY
                    : diff > paddedWorst ? diff
                                         : paddedWorst;
    }
  printf("padded: max |padded - packed| = %.2e, %lld nonzero padding "
         "outputs\n",
         paddedWorst, (long long)leaked);
  same &= paddedWorst == 0 && leaked == 0;
  int64_t tooLong[64];
  for (int64_t s = 0; s < count && s < 64; ++s)
    tooLong[s] = longest + 1;
  if (attn_stack_forward_padded(stack, px, tooLong, pout) != 0)
    printf("too long: %s\n", attn_last_error());
  attn_tensor_release(px);
  attn_tensor_release(pout);
  /* A decoder's sequence in progress again (a padded call keeps none). */
  int64_t tokenShape[3] = {1, 1, width};
  attn_tensor *token = attn_tensor_create(ATTN_F32, 3, tokenShape);
  attn_tensor *tokenOut = attn_tensor_create(ATTN_F32, 3, tokenShape);
  memcpy(attn_tensor_data(token), values, sizeof(float) * width);
  attn_stack_forward(stack, token, NULL, tokenOut);
  attn_tensor_release(token);
  attn_tensor_release(tokenOut);

  /* Calls to refuse: lengths that do not add up to the rows, a zero
   * length, no lengths; a decoder's sequence in progress (the last
   * attn_stack_forward above left one) for a packed pass. */
  int64_t wrong[2] = {lengths[0], total};
  if (attn_stack_forward_packed(stack, x, wrong, 2, out) != 0)
    printf("wrong sum: %s\n", attn_last_error());
  int64_t zero[2] = {0, total};
  if (attn_stack_forward_packed(stack, x, zero, 2, out) != 0)
    printf("zero length: %s\n", attn_last_error());
  if (attn_stack_forward_packed(stack, x, NULL, 1, out) != 0)
    printf("no lengths: %s\n", attn_last_error());
  if (attn_stack_forward_packed(stack, x, lengths, count, out) != 0)
    printf("in progress: %s\n", attn_last_error());
  attn_stack_release(stack);
  attn_artifact_release(artifact);
  attn_tensor_release(x);
  attn_tensor_release(out);
  free(lengths);
  return same ? 0 : 1;
}
