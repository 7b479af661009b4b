/* Checks 16-bit attention kernels (and f32 ones, e.g. 3xTF32's) through
 * the C API against a plain f64 reference, with nothing but the runtime (for a
 * machine lent with a GPU and no LLVM: bench/gpu_lent_check.sh; in the suite on
 * lavapipe):
 *
 *   gpu-check16 vulkan|cuda KERNELS FUNCTION...
 *
 * Each FUNCTION is named TYPE_dD_nN[_causal] (TYPE f16, bf16 or f32) and
 * takes
 * Q, K, V of [1, 2, N, D] (causal: top-left aligned). Inputs are uniform in
 * [-1, 1], rounded to TYPE; the reference computes on the rounded inputs
 * in f64. The bar on the scaled error max |O - ref| / max |ref|: 8 units
 * of TYPE's rounding (2^-11 for f16, 2^-8 for bf16), where a kernel adds
 * one rounding of O and one of P (both to TYPE) plus f32 sums: a correct
 * one sits well inside, a dropped or misplaced tile far outside. f32's bar
 * is 1e-5, attn-run's for f32: 3xTF32 sits near 1e-6, TF32 alone (3e-4 to
 * 7e-4) fails it. A FUNCTION named linear_mM_kK_nN is a layer's product
 * (GpuLinearKernel.cpp): Y [M, N] = X [M, K] W^T with W [N, K], f32,
 * against the f64 product at 1e-5 of max |ref| (f32 sums of K products;
 * a dropped k-block or a misplaced row is off by O(1)). Exit status 1 when
 * any function fails. */
#include "attn-c/Gpu.h"
#include "attn-c/Runtime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HEADS = 2 };

/* f32 -> f16 or bf16 bits, rounded to nearest even (inputs here are
 * finite and within [-1, 1]; f16 subnormals are rounded too), and back. */
static uint16_t toBits(float x, int bf16) {
  uint32_t w;
  memcpy(&w, &x, 4);
  if (bf16)
    return (uint16_t)((w + 0x7fff + ((w >> 16) & 1)) >> 16);
  uint16_t sign = (uint16_t)((w >> 16) & 0x8000);
  double magnitude = fabs((double)x);
  if (magnitude < 0x1p-24 / 2)
    return sign;
  int exponent;
  frexp(magnitude, &exponent); /* magnitude in [2^(e-1), 2^e) */
  /* Units of the last place: 2^(e-11) for normals, 2^-24 below 2^-14. */
  int ulpExponent = exponent - 11 < -24 ? -24 : exponent - 11;
  double units = nearbyint(ldexp(magnitude, -ulpExponent)); /* even ties */
  double rounded = ldexp(units, ulpExponent);
  if (rounded < 0x1p-14)
    return (uint16_t)(sign | (uint16_t)ldexp(rounded, 24));
  frexp(rounded, &exponent);
  uint16_t mantissa = (uint16_t)(ldexp(rounded, 11 - exponent) - 1024);
  return (uint16_t)(sign | (uint16_t)((exponent + 14) << 10) | mantissa);
}

static double fromBits(uint16_t bits, int bf16) {
  if (bf16) {
    uint32_t w = (uint32_t)bits << 16;
    float x;
    memcpy(&x, &w, 4);
    return x;
  }
  int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double magnitude =
      exponent ? ldexp(1024 + mantissa, exponent - 25) : ldexp(mantissa, -24);
  return bits & 0x8000 ? -magnitude : magnitude;
}

enum Type { F16, BF16, F32 };

/* Element i of a buffer of `type`: x rounded to it, and back. */
static void put(void *buffer, int64_t i, float x, enum Type type) {
  if (type == F32)
    ((float *)buffer)[i] = x;
  else
    ((uint16_t *)buffer)[i] = toBits(x, type == BF16);
}

static double get(const void *buffer, int64_t i, enum Type type) {
  if (type == F32)
    return ((const float *)buffer)[i];
  return fromBits(((const uint16_t *)buffer)[i], type == BF16);
}

/* A product linear_mM_kK_nN (see the file comment). */
static int checkLinear(attn_gpu_device *device, attn_gpu_program *program,
                       const char *name) {
  int m = 0, k = 0, n = 0;
  if (sscanf(name, "linear_m%d_k%d_n%d", &m, &k, &n) != 3 || m <= 0 ||
      k <= 0 || n <= 0) {
    printf("%s: not linear_mM_kK_nN\n", name);
    return 0;
  }
  int64_t counts[3] = {(int64_t)m * k, (int64_t)n * k, (int64_t)m * n};
  float *host[3];
  attn_gpu_buffer *buffers[3];
  for (int t = 0; t < 3; ++t) {
    host[t] = malloc(sizeof(float) * counts[t]);
    for (int64_t i = 0; i < counts[t]; ++i)
      host[t][i] = (float)((double)rand() / RAND_MAX * 2 - 1);
    buffers[t] = attn_gpu_buffer_create(device, sizeof(float) * counts[t]);
    if (t < 2)
      attn_gpu_buffer_write(buffers[t], host[t], sizeof(float) * counts[t]);
  }
  int ok = attn_gpu_call(program, name, buffers, 2, &buffers[2], 1) == 0 &&
           attn_gpu_buffer_read(buffers[2], host[2],
                                sizeof(float) * counts[2]) == 0;
  if (!ok)
    printf("%s: call failed: %s\n", name, attn_last_error());
  double worst = 0, scale = 0;
  for (int r = 0; ok && r < m; ++r)
    for (int c = 0; c < n; ++c) {
      double want = 0;
      for (int i = 0; i < k; ++i)
        want += (double)host[0][(int64_t)r * k + i] * host[1][(int64_t)c * k + i];
      double error = fabs(host[2][(int64_t)r * n + c] - want);
      worst = error > worst || isnan(error) ? error : worst;
      scale = fabs(want) > scale ? fabs(want) : scale;
    }
  double scaled = worst / scale;
  ok = ok && scaled <= 1e-5;
  printf("%s: scaled error %.2e (bar 1.0e-05), %.3f ms: %s\n", name, scaled,
         attn_gpu_last_call_milliseconds(program), ok ? "PASS" : "FAIL");
  for (int t = 0; t < 3; ++t) {
    attn_gpu_buffer_release(buffers[t]);
    free(host[t]);
  }
  return ok;
}

static int check(attn_gpu_device *device, attn_gpu_program *program,
                 const char *name) {
  if (strncmp(name, "linear_", 7) == 0)
    return checkLinear(device, program, name);
  int d = 0, n = 0;
  enum Type type = strncmp(name, "bf16_", 5) == 0  ? BF16
                   : strncmp(name, "f32_", 4) == 0 ? F32
                                                   : F16;
  int causal = strstr(name, "_causal") != NULL;
  const char *dims = strchr(name, '_');
  if (!dims || sscanf(dims, "_d%d_n%d", &d, &n) != 2 || d <= 0 || n <= 0) {
    printf("%s: not TYPE_dD_nN[_causal]\n", name);
    return 0;
  }
  int64_t count = (int64_t)HEADS * n * d, bytes = count * (type == F32 ? 4 : 2);
  for (int i = 0; i < 4; ++i)
    if (attn_gpu_operand_bytes(program, name, i) != bytes) {
      printf("%s: operand %d has %lld bytes, not %lld: %s\n", name, i,
             (long long)attn_gpu_operand_bytes(program, name, i),
             (long long)bytes, attn_last_error());
      return 0;
    }
  void *in[3], *out = malloc(bytes);
  attn_gpu_buffer *buffers[4];
  for (int t = 0; t < 3; ++t) {
    in[t] = malloc(bytes);
    for (int64_t i = 0; i < count; ++i)
      put(in[t], i, (float)((double)rand() / RAND_MAX * 2 - 1), type);
  }
  for (int t = 0; t < 4; ++t)
    buffers[t] = attn_gpu_buffer_create(device, bytes);
  for (int t = 0; t < 3; ++t)
    attn_gpu_buffer_write(buffers[t], in[t], bytes);
  int ok = attn_gpu_call(program, name, buffers, 3, &buffers[3], 1) == 0 &&
           attn_gpu_buffer_read(buffers[3], out, bytes) == 0;
  if (!ok)
    printf("%s: call failed: %s\n", name, attn_last_error());
  double worst = 0, scale = 0, *p = malloc(sizeof(double) * n);
  double softmaxScale = 1 / sqrt((double)d);
  for (int h = 0; ok && h < HEADS; ++h)
    for (int i = 0; i < n; ++i) {
      int64_t q = ((int64_t)h * n + i) * d;
      int keys = causal ? i + 1 : n;
      double max = -INFINITY, sum = 0;
      for (int j = 0; j < keys; ++j) {
        int64_t k = ((int64_t)h * n + j) * d;
        double s = 0;
        for (int c = 0; c < d; ++c)
          s += get(in[0], q + c, type) * get(in[1], k + c, type);
        p[j] = s * softmaxScale;
        max = p[j] > max ? p[j] : max;
      }
      for (int j = 0; j < keys; ++j)
        sum += p[j] = exp(p[j] - max);
      for (int c = 0; c < d; ++c) {
        double want = 0;
        for (int j = 0; j < keys; ++j)
          want += p[j] * get(in[2], ((int64_t)h * n + j) * d + c, type);
        want /= sum;
        double got = get(out, ((int64_t)h * n + i) * d + c, type);
        double error = fabs(got - want);
        worst = error > worst || isnan(error) ? error : worst;
        scale = fabs(want) > scale ? fabs(want) : scale;
      }
    }
  double bar = type == F32 ? 1e-5 : type == BF16 ? 8 * 0x1p-8 : 8 * 0x1p-11;
  double scaled = worst / scale;
  ok = ok && scaled <= bar;
  printf("%s: scaled error %.2e (bar %.1e), %.3f ms: %s\n", name, scaled, bar,
         attn_gpu_last_call_milliseconds(program), ok ? "PASS" : "FAIL");
  for (int t = 0; t < 4; ++t)
    attn_gpu_buffer_release(buffers[t]);
  for (int t = 0; t < 3; ++t)
    free(in[t]);
  free(out);
  free(p);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: gpu-check16 vulkan|cuda KERNELS FUNCTION...\n");
    return 2;
  }
  attn_gpu_device *device = attn_gpu_device_open(argv[1]);
  if (!device) {
    printf("no device: %s\n", attn_last_error());
    return 1;
  }
  printf("device: %s\n", attn_gpu_device_describe(device));
  attn_gpu_program *program = attn_gpu_program_load(device, argv[2], NULL);
  if (!program) {
    printf("load: %s\n", attn_last_error());
    return 1;
  }
  srand(11);
  int failures = 0;
  for (int i = 3; i < argc; ++i)
    failures += !check(device, program, argv[i]);
  attn_gpu_program_release(program);
  attn_gpu_device_release(device);
  return failures ? 1 : 0;
}
