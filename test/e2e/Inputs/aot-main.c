/* Calls the kernel attn-compile built from aot-spec.yaml and checks it
 * against a plain double-precision attention written here (independent of
 * attn's runtime). Two ways in:
 *   default          the C header attn-compile generated (-include aot.h);
 *   -DATTN_C_API     the runtime's C API (attn-c/Runtime.h, -lattn_c) on
 *                    the library named by argv[1], plus its error cases;
 *                    argv[2], when given, is the same attention compiled
 *                    with dynamic sizes (aot-dynamic.mlir). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef ATTN_C_API
#include "attn-c/Runtime.h"
#endif

enum { B = 1, HQ = 4, HKV = 2, LQ = 37, LK = 100, D = 40 };

static float q[B][HQ][LQ][D], k[B][HKV][LK][D], v[B][HKV][LK][D];
/* The kernel writes its result here: outputs are the caller's. */
static float o[B][HQ][LQ][D];

#ifdef ATTN_C_API
/* The kernel with dynamic sizes on the same inputs: attn_run sizes its
 * output from the inputs as the signature says, an output of another size
 * is refused (the kernel would write past it), and the numbers agree with
 * the static kernel's within the f32 tolerance used below. */
static void runDynamic(const char *path, attn_tensor *inputs[3],
                       attn_tensor *expected) {
  attn_artifact *artifact = attn_artifact_load(path);
  attn_tensor *out =
      artifact ? attn_run(artifact, "aot_dynamic", inputs, 3, 4) : NULL;
  if (!out) {
    printf("dynamic failed: %s\n", attn_last_error());
    exit(1);
  }
  const float *got = (const float *)attn_tensor_data(out);
  const float *want = (const float *)attn_tensor_data(expected);
  double worst = 0, scale = 0;
  for (int e = 0; e < B * HQ * LQ * D; ++e) {
    double diff = fabs((double)got[e] - want[e]);
    worst = diff > worst || isnan(diff) ? (isnan(diff) ? INFINITY : diff)
                                        : worst;
    scale = fabs(want[e]) > scale ? fabs(want[e]) : scale;
  }
  printf("dynamic: output [%lld %lld %lld %lld], %s\n",
         (long long)attn_tensor_size(out, 0), (long long)attn_tensor_size(out, 1),
         (long long)attn_tensor_size(out, 2), (long long)attn_tensor_size(out, 3),
         worst <= 1e-5 * scale ? "matches the static kernel" : "MISMATCH");
  int64_t shorter[4] = {B, HQ, LQ - 1, D};
  attn_tensor *small = attn_tensor_create(ATTN_F32, 4, shorter);
  if (attn_call(artifact, "aot_dynamic", inputs, 3, &small, 1) != 0)
    printf("dynamic short output: %s\n", attn_last_error());
  attn_tensor_release(small);
  /* Values shorter than the keys: the kernel would read past them. */
  int64_t fewer[4] = {B, HKV, LK - 1, D};
  attn_tensor *shortValues = attn_tensor_create(ATTN_F32, 4, fewer);
  attn_tensor *mismatched[3] = {inputs[0], inputs[1], shortValues};
  if (attn_call(artifact, "aot_dynamic", mismatched, 3, &out, 1) != 0)
    printf("dynamic short values: %s\n", attn_last_error());
  attn_tensor_release(shortValues);
  attn_tensor_release(out);
  attn_artifact_release(artifact);
}

/* Runs the kernel through the C API; returns the dense [B, HQ, LQ, D]
 * result (caller frees with attn_tensor_release) or exits. */
static attn_tensor *runWithCApi(const char *path, const char *dynamicPath,
                                const float *data[3]) {
  attn_artifact *artifact = attn_artifact_load(path);
  if (!artifact) {
    printf("load failed: %s\n", attn_last_error());
    exit(1);
  }
  int64_t shapes[3][4] = {{B, HQ, LQ, D}, {B, HKV, LK, D}, {B, HKV, LK, D}};
  attn_tensor *inputs[3];
  for (int t = 0; t < 3; ++t) {
    inputs[t] = attn_tensor_create(ATTN_F32, 4, shapes[t]);
    int64_t count = shapes[t][0] * shapes[t][1] * shapes[t][2] * shapes[t][3];
    memcpy(attn_tensor_data(inputs[t]), data[t], count * sizeof(float));
  }
  /* Destination-passing: the caller creates the output. */
  attn_tensor *out = attn_tensor_create(ATTN_F32, 4, shapes[0]);
  if (attn_call(artifact, "aot_causal", inputs, 3, &out, 1) != 0) {
    printf("run failed: %s\n", attn_last_error());
    exit(1);
  }
  /* attn_run creates the output from the signature: same numbers. */
  attn_tensor *created = attn_run(artifact, "aot_causal", inputs, 3, 4);
  if (!created) {
    printf("attn_run failed: %s\n", attn_last_error());
    exit(1);
  }
  printf("attn_run: %s\n",
         memcmp(attn_tensor_data(created), attn_tensor_data(out),
                sizeof(o)) == 0
             ? "same result"
             : "different result");
  attn_tensor_release(created);
  /* Outputs that do not match the signature: refused before the call. */
  int64_t keyShape[4] = {B, HQ, LK, D};
  attn_tensor *tooLong = attn_tensor_create(ATTN_F32, 4, keyShape);
  if (attn_call(artifact, "aot_causal", inputs, 3, &tooLong, 1) != 0)
    printf("wrong output: %s\n", attn_last_error());
  attn_tensor_release(tooLong);
  if (attn_call(artifact, "aot_causal", inputs, 3, NULL, 1) != 0)
    printf("null outputs: %s\n", attn_last_error());
  if (attn_call(artifact, "aot_causal", inputs, 3, &out, 0) != 0)
    printf("no outputs: %s\n", attn_last_error());
  /* Errors come back as NULL and a message, never a crash. */
  if (attn_run(artifact, "no_such_function", inputs, 3, 4) == NULL)
    printf("unknown function: %s\n", attn_last_error());
  if (attn_artifact_load("/nonexistent/libnothing.so") == NULL)
    printf("missing library: %s\n", attn_last_error());
  int64_t bad[1] = {-1};
  if (attn_tensor_create(ATTN_F32, 1, bad) == NULL)
    printf("bad shape: %s\n", attn_last_error());
  /* Sizes whose byte count overflows: refused before any allocation. */
  int64_t huge[2] = {(int64_t)1 << 62, 4};
  if (attn_tensor_create(ATTN_F32, 2, huge) == NULL)
    printf("huge shape: %s\n", attn_last_error());
  /* A result rank smaller than the kernel's: refused, nothing overwritten. */
  if (attn_run(artifact, "aot_causal", inputs, 3, 2) == NULL)
    printf("wrong rank: %s\n", attn_last_error());
  /* Inputs that do not match the signature the artifact exports. */
  attn_tensor *wrong[3] = {inputs[0], inputs[0], inputs[2]};
  if (attn_run(artifact, "aot_causal", wrong, 3, 4) == NULL)
    printf("wrong shape: %s\n", attn_last_error());
  if (attn_run(artifact, "aot_causal", inputs, 2, 4) == NULL)
    printf("wrong count: %s\n", attn_last_error());
  /* NULL arguments. */
  if (attn_run(artifact, "aot_causal", NULL, 3, 4) == NULL)
    printf("null inputs: %s\n", attn_last_error());
  attn_tensor *holes[3] = {inputs[0], NULL, inputs[2]};
  if (attn_run(artifact, "aot_causal", holes, 3, 4) == NULL)
    printf("null input: %s\n", attn_last_error());
  if (attn_tensor_rank(NULL) == -1 && attn_tensor_data(NULL) == NULL)
    printf("null tensor: handled\n");
  /* 16-bit tensors: two bytes per element; an f16 query for this f32
   * kernel is refused by its signature, an unknown dtype at creation. */
  attn_tensor *half = attn_tensor_create(ATTN_F16, 4, shapes[0]);
  attn_tensor *brain = attn_tensor_create(ATTN_BF16, 1, shapes[0]);
  printf("16-bit: sizes %lld %lld %lld, dtypes %d %d\n",
         (long long)attn_dtype_size(ATTN_F16),
         (long long)attn_dtype_size(ATTN_BF16),
         (long long)attn_dtype_size(ATTN_I32), (int)attn_tensor_dtype(half),
         (int)attn_tensor_dtype(brain));
  if (half && brain) {
    /* Zero-filled over exactly the elements: write the last one. */
    uint16_t *h = (uint16_t *)attn_tensor_data(half);
    int64_t n = 1;
    for (int d = 0; d < 4; ++d)
      n *= attn_tensor_size(half, d);
    h[n - 1] = 0x3c00; /* 1.0 in binary16 */
    attn_tensor *typed[3] = {half, inputs[1], inputs[2]};
    if (attn_run(artifact, "aot_causal", typed, 3, 4) == NULL)
      printf("f16 input: %s\n", attn_last_error());
  }
  attn_tensor_release(half);
  attn_tensor_release(brain);
  /* Tensors over the caller's memory: the kernel reads the wrapped inputs
   * and writes the wrapped output in place; releasing a wrapper frees
   * nothing of the caller's. */
  {
    attn_tensor *wrapped[3];
    for (int t = 0; t < 3; ++t)
      wrapped[t] = attn_tensor_wrap(ATTN_F32, 4, shapes[t],
                                    attn_tensor_data(inputs[t]));
    static float inPlace[B][HQ][LQ][D];
    attn_tensor *target = attn_tensor_wrap(ATTN_F32, 4, shapes[0], inPlace);
    attn_tensor *fresh = attn_run(artifact, "aot_causal", inputs, 3, 4);
    if (attn_call(artifact, "aot_causal", wrapped, 3, &target, 1) == 0 && fresh &&
        memcmp(inPlace, attn_tensor_data(fresh), sizeof inPlace) == 0)
      printf("wrapped: same result in place\n");
    attn_tensor_release(fresh);
    attn_tensor_release(target);
    for (int t = 0; t < 3; ++t)
      attn_tensor_release(wrapped[t]);
    if (attn_tensor_wrap(ATTN_F32, 4, shapes[0], NULL) == NULL)
      printf("wrap null: %s\n", attn_last_error());
    int64_t negative[1] = {-1};
    if (attn_tensor_wrap(ATTN_F32, 1, negative, inPlace) == NULL)
      printf("wrap negative: %s\n", attn_last_error());
    const char *signature = attn_artifact_signature(artifact, "aot_causal");
    printf("signature: %s\n", signature ? signature : "(none)");
    if (attn_artifact_signature(artifact, "no_such_function") == NULL)
      printf("no signature: %s\n", attn_last_error());
  }
  if (attn_tensor_create((attn_dtype)7, 1, shapes[0]) == NULL &&
      attn_dtype_size((attn_dtype)7) == -1)
    printf("unknown dtype: %s\n", attn_last_error());
  /* FAVOR+'s omega: rows of a block of D = 4 are orthogonal. */
  float omega[6 * 4];
  if (attn_orthogonal_random_features(6, 4, 1, omega) == 0) {
    double worst = 0;
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b) {
        double d = 0, na = 0, nb = 0;
        for (int c = 0; c < 4; ++c) {
          d += omega[a * 4 + c] * omega[b * 4 + c];
          na += omega[a * 4 + c] * omega[a * 4 + c];
          nb += omega[b * 4 + c] * omega[b * 4 + c];
        }
        if (fabs(d) / sqrt(na * nb) > worst)
          worst = fabs(d) / sqrt(na * nb);
      }
    printf("orthogonal features: %s\n", worst < 1e-5 ? "yes" : "no");
  }
  /* One feature of a huge dim: one row drawn (it took cubic work and a
   * dim x dim buffer, and aborted with std::bad_alloc at 2^20). The row is
   * a Gaussian vector's length: |w|^2 / dim within 1 % of 1. */
  {
    int64_t dim = (int64_t)1 << 20;
    float *one = (float *)malloc(sizeof(float) * (size_t)dim);
    if (one && attn_orthogonal_random_features(1, dim, 5, one) == 0) {
      double squares = 0;
      for (int64_t c = 0; c < dim; ++c)
        squares += (double)one[c] * one[c];
      printf("one huge feature: %s\n",
             fabs(squares / (double)dim - 1) < 0.01 ? "yes" : "no");
    }
    free(one);
  }
  if (attn_orthogonal_random_features(6, 0, 1, omega) != 0)
    printf("bad features: %s\n", attn_last_error());
  if (dynamicPath)
    runDynamic(dynamicPath, inputs, out);
  for (int t = 0; t < 3; ++t)
    attn_tensor_release(inputs[t]);
  attn_artifact_release(artifact);
  return out;
}
#else
static attn_memref_float_4d describe(float *data, int h, int l) {
  attn_memref_float_4d m = {data, data, 0, {B, h, l, D},
                            {(int64_t)h * l * D, (int64_t)l * D, D, 1}};
  return m;
}
#endif

int main(int argc, char **argv) {
  unsigned state = 12345;
  float *all[3] = {&q[0][0][0][0], &k[0][0][0][0], &v[0][0][0][0]};
  int counts[3] = {B * HQ * LQ * D, B * HKV * LK * D, B * HKV * LK * D};
  for (int t = 0; t < 3; ++t)
    for (int e = 0; e < counts[t]; ++e) {
      state = state * 1103515245u + 12345u;
      all[t][e] = (float)((state >> 8) % 20001) / 10000.0f - 1.0f;
    }
  /* The result as a base pointer and strides of [B, HQ, LQ, D]. */
  const float *result;
  int64_t sizes[4], strides[4];
#ifdef ATTN_C_API
  if (argc < 2) {
    printf("usage: %s ARTIFACT.so\n", argv[0]);
    return 1;
  }
  attn_tensor *out =
      runWithCApi(argv[1], argc > 2 ? argv[2] : NULL,
                  (const float *[3]){all[0], all[1], all[2]});
  result = (const float *)attn_tensor_data(out);
  for (int d = 3, stride = 1; d >= 0; stride *= sizes[d--])
    sizes[d] = attn_tensor_size(out, d), strides[d] = stride;
#else
  (void)argc, (void)argv;
  attn_memref_float_4d mq = describe(&q[0][0][0][0], HQ, LQ),
                       mk = describe(&k[0][0][0][0], HKV, LK),
                       mv = describe(&v[0][0][0][0], HKV, LK),
                       out = describe(&o[0][0][0][0], HQ, LQ);
  _mlir_ciface_aot_causal(&mq, &mk, &mv, &out);
  result = out.aligned + out.offset;
  for (int d = 0; d < 4; ++d)
    sizes[d] = out.sizes[d], strides[d] = out.strides[d];
#endif

  double maxError = 0, scale = 0;
  int delta = LK - LQ; /* bottom-right: query i sits at key position i + delta */
  for (int h = 0; h < HQ; ++h)
    for (int i = 0; i < LQ; ++i) {
      double logits[LK], mx = -INFINITY, sum = 0, o[D] = {0};
      for (int j = 0; j < LK; ++j) {
        double dot = 0;
        for (int c = 0; c < D; ++c)
          dot += (double)q[0][h][i][c] * k[0][h / (HQ / HKV)][j][c];
        logits[j] = j <= i + delta ? dot / sqrt((double)D) : -INFINITY;
        if (logits[j] > mx)
          mx = logits[j];
      }
      for (int j = 0; j < LK; ++j) {
        if (logits[j] == -INFINITY)
          continue;
        double e = exp(logits[j] - mx);
        sum += e;
        for (int c = 0; c < D; ++c)
          o[c] += e * v[0][h / (HQ / HKV)][j][c];
      }
      for (int c = 0; c < D; ++c) {
        double ref = o[c] / sum;
        double got =
            result[h * strides[1] + i * strides[2] + c * strides[3]];
        if (fabs(ref) > scale)
          scale = fabs(ref);
        if (!(fabs(got - ref) <= maxError))
          maxError = isnan(got) ? INFINITY : fabs(got - ref);
      }
    }
#ifdef ATTN_C_API
  attn_tensor_release(out);
#endif
  /* Same f32 tolerance as the other e2e tests: 1e-5 of the output scale. */
  int pass = maxError <= 1e-5 * scale;
  printf("aot: shape [%lld %lld %lld %lld], max error %.2e, scale %.2e: %s\n",
         (long long)sizes[0], (long long)sizes[1], (long long)sizes[2],
         (long long)sizes[3], maxError, scale,
         pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
