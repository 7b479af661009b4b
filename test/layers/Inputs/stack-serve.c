/* Continuous batching through a layer artifact (attn_stack_add_sequence,
 * attn_stack_step, attn_stack_remove_sequence): a trace of SEQUENCES
 * sequences, at most 8 live, each step at most 24 tokens (every decode
 * token first, then prompt chunks in admission order); sequences leave when
 * decoded and new ones take their slots. Every sequence's outputs are then
 * compared with attn_stack_forward on the whole sequence in one causal pass
 * (another code path: no cache, no chunks), within 1e-5 scaled: f32
 * rounding of sums taken in another order.
 *
 *   stack-serve LIB.so WEIGHTS.safetensors D_MODEL SEQUENCES
 *
 * Prints "serve: ... SAME" (exit 0) or DIFFERENT (exit 1), then the answers
 * to calls the API must refuse. */
#include "attn-c/Runtime.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxLive = 8, kStepTokens = 24 };

typedef struct {
  int64_t prompt, output, done, id;
  float *tokens, *outputs; /* [prompt + output, width] each */
} Sequence;

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s LIB.so WEIGHTS D_MODEL SEQUENCES\n", argv[0]);
    return 2;
  }
  int64_t width = atoll(argv[3]), count = atoll(argv[4]);
  attn_artifact *artifact = attn_artifact_load(argv[1]);
  attn_stack *stack = artifact ? attn_stack_load(artifact, argv[2]) : NULL;
  if (!stack) {
    printf("stack: %s\n", attn_last_error());
    return 1;
  }
  Sequence *seqs = calloc(count, sizeof(Sequence));
  for (int64_t s = 0; s < count; ++s) {
    seqs[s].prompt = 1 + (s * 7) % 23;
    seqs[s].output = 1 + (s * 5) % 11;
    seqs[s].id = -1;
    int64_t rows = seqs[s].prompt + seqs[s].output;
    seqs[s].tokens = malloc(sizeof(float) * rows * width);
    seqs[s].outputs = malloc(sizeof(float) * rows * width);
    for (int64_t i = 0; i < rows * width; ++i)
      seqs[s].tokens[i] =
          (float)(sin(0.37 * (double)(i + 1000 * s)) + 0.1 * cos(3.1 * i));
  }
  int64_t next = 0, finished = 0, steps = 0, peak = 0;
  int64_t live[kMaxLive], numLive = 0;
  while (finished < count) {
    while (numLive < kMaxLive && next < count) {
      seqs[next].id = attn_stack_add_sequence(stack);
      if (seqs[next].id < 0) {
        printf("add: %s\n", attn_last_error());
        return 1;
      }
      live[numLive++] = next++;
    }
    peak = numLive > peak ? numLive : peak;
    int64_t ids[kMaxLive], lengths[kMaxLive], members[kMaxLive], n = 0;
    int64_t budget = kStepTokens;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t i = 0; i < numLive && budget; ++i) {
        Sequence *q = &seqs[live[i]];
        int decoding = q->done >= q->prompt;
        if ((pass == 0) != decoding)
          continue;
        int64_t take = decoding ? 1 : q->prompt - q->done;
        take = take < budget ? take : budget;
        members[n] = live[i];
        ids[n] = q->id;
        lengths[n++] = take;
        budget -= take;
      }
    int64_t shape[2] = {kStepTokens - budget, width};
    attn_tensor *x = attn_tensor_create(ATTN_F32, 2, shape);
    attn_tensor *out = attn_tensor_create(ATTN_F32, 2, shape);
    float *xs = (float *)attn_tensor_data(x);
    for (int64_t i = 0, row = 0; i < n; row += lengths[i++])
      memcpy(xs + row * width,
             seqs[members[i]].tokens + seqs[members[i]].done * width,
             sizeof(float) * lengths[i] * width);
    if (attn_stack_step(stack, ids, lengths, n, x, out) != 0) {
      printf("step: %s\n", attn_last_error());
      return 1;
    }
    const float *ys = (const float *)attn_tensor_data(out);
    for (int64_t i = 0, row = 0; i < n; row += lengths[i++]) {
      Sequence *q = &seqs[members[i]];
      memcpy(q->outputs + q->done * width, ys + row * width,
             sizeof(float) * lengths[i] * width);
      q->done += lengths[i];
      if (attn_stack_sequence_length(stack, q->id) != q->done) {
        printf("sequence %lld holds %lld tokens, not %lld\n", (long long)q->id,
               (long long)attn_stack_sequence_length(stack, q->id),
               (long long)q->done);
        return 1;
      }
    }
    attn_tensor_release(x);
    attn_tensor_release(out);
    ++steps;
    for (int64_t i = 0; i < numLive;) {
      Sequence *q = &seqs[live[i]];
      if (q->done < q->prompt + q->output) {
        ++i;
        continue;
      }
      if (attn_stack_remove_sequence(stack, q->id) != 0) {
        printf("remove: %s\n", attn_last_error());
        return 1;
      }
      live[i] = live[--numLive];
      ++finished;
    }
  }
  double worst = 0, largest = 0;
  for (int64_t s = 0; s < count; ++s) {
    int64_t rows = seqs[s].prompt + seqs[s].output;
    int64_t shape[3] = {1, rows, width};
    attn_tensor *x = attn_tensor_create(ATTN_F32, 3, shape);
    attn_tensor *out = attn_tensor_create(ATTN_F32, 3, shape);
    memcpy(attn_tensor_data(x), seqs[s].tokens, sizeof(float) * rows * width);
    attn_stack_reset(stack);
    if (attn_stack_forward(stack, x, NULL, out) != 0) {
      printf("whole: %s\n", attn_last_error());
      return 1;
    }
    const float *whole = (const float *)attn_tensor_data(out);
    for (int64_t i = 0; i < rows * width; ++i) {
      double diff = fabs((double)seqs[s].outputs[i] - whole[i]);
      worst = isnan(diff) ? INFINITY : diff > worst ? diff : worst;
      largest = fabs(whole[i]) > largest ? fabs(whole[i]) : largest;
    }
    attn_tensor_release(x);
    attn_tensor_release(out);
  }
  double error = worst / largest;
  int same = error <= 1e-5;
  printf("serve: %lld sequences in %lld steps, at most %lld live, max "
         "|served - whole| / max |whole| = %.2e: %s\n",
         (long long)count, (long long)steps, (long long)peak, error,
         same ? "SAME" : "DIFFERENT");

  /* Calls to refuse. */
  int64_t a = attn_stack_add_sequence(stack),
          b = attn_stack_add_sequence(stack);
  int64_t shape[2] = {4, width};
  attn_tensor *x = attn_tensor_create(ATTN_F32, 2, shape);
  attn_tensor *out = attn_tensor_create(ATTN_F32, 2, shape);
  for (int64_t i = 0; i < 4 * width; ++i)
    ((float *)attn_tensor_data(x))[i] = (float)sin(0.1 * (double)i);
  int64_t two[2] = {a, b}, split[2] = {1, 3}, wrong[2] = {1, 2};
  int64_t unknown[2] = {a, 999999}, twice[2] = {a, a};
  if (attn_stack_step(stack, unknown, split, 2, x, out) != 0)
    printf("unknown: %s\n", attn_last_error());
  if (attn_stack_step(stack, twice, split, 2, x, out) != 0)
    printf("twice: %s\n", attn_last_error());
  if (attn_stack_step(stack, two, wrong, 2, x, out) != 0)
    printf("wrong sum: %s\n", attn_last_error());
  if (attn_stack_step(stack, two, split, 2, x, NULL) != 0)
    printf("no out: %s\n", attn_last_error());
  if (attn_stack_set_serving_limits(stack, -1, 0) != 0)
    printf("limits: %s\n", attn_last_error());
  /* A capacity of 3 tokens: b's 3 fit, a's next 2 would not. The step
   * that fails leaves both sequences as they were. */
  attn_stack_set_serving_limits(stack, 2, 3);
  if (attn_stack_step(stack, two, split, 2, x, out) != 0)
    printf("step: %s\n", attn_last_error());
  int64_t again[2] = {2, 2};
  if (attn_stack_step(stack, two, again, 2, x, out) != 0)
    printf("capacity: %s\n", attn_last_error());
  printf("after: %lld and %lld tokens\n",
         (long long)attn_stack_sequence_length(stack, a),
         (long long)attn_stack_sequence_length(stack, b));
  if (attn_stack_add_sequence(stack) < 0)
    printf("full: %s\n", attn_last_error());
  attn_stack_remove_sequence(stack, a);
  if (attn_stack_remove_sequence(stack, a) != 0)
    printf("removed: %s\n", attn_last_error());
  if (attn_stack_sequence_length(stack, a) < 0)
    printf("length: %s\n", attn_last_error());
  attn_stack_release(stack);
  attn_artifact_release(artifact);
  attn_tensor_release(x);
  attn_tensor_release(out);
  for (int64_t s = 0; s < count; ++s) {
    free(seqs[s].tokens);
    free(seqs[s].outputs);
  }
  free(seqs);
  return same ? 0 : 1;
}
