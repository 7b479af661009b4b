/* Runs the two-layer encoder attn-compile built from aot-encoder.yaml
 * through the C API alone (attn_stack_*) and checks it against a plain
 * double-precision encoder written here from docs/Transformer.md,
 * independent of attn's runtime: sinusoidal positions, then per layer
 * post-norm self-attention (GQA 4:2, non-causal) and a GELU feed-forward,
 * all with biases. argv[1]: the stack's library; argv[2]: a kernel library
 * without a layer manifest (for the error case); argv[3]: where to write the
 * weights as a safetensors file for attn_stack_load; argv[4], optional:
 * "bf16" for a stack built from the bf16 variant of the spec, whose linear
 * maps' weights the stack rounds to bf16 (nearest even) and the reference
 * here rounds the same way (biases, norms and activations stay f32), or
 * "bf16x" for such a stack whose products also round their input x to bf16
 * (vdpbf16ps: weights in k pairs, manifest type bf16-pairs) and whose
 * attention takes q, k and v in bf16, as the reference then does. Prints
 * the worst error and PASS or FAIL, then the errors the API reports for bad
 * calls. */
#include "attn-c/Runtime.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LAYERS = 2, DM = 32, H = 4, HKV = 2, HD = 8, FF = 48, B = 2, L = 37 };

/* Weights of one layer, in the shapes of docs/Transformer.md. */
typedef struct {
  float qw[H * HD][DM], qb[H * HD], kw[HKV * HD][DM], kb[HKV * HD];
  float vw[HKV * HD][DM], vb[HKV * HD], ow[DM][H * HD], ob[DM];
  float n1w[DM], n1b[DM], n2w[DM], n2b[DM];
  float f1w[FF][DM], f1b[FF], f2w[DM][FF], f2b[DM];
} Layer;

static Layer layers[LAYERS];
static float x[B][L][DM];

/* Deterministic values in [-scale, scale) (a 64-bit LCG). */
static unsigned long long state = 12345;
static float uniform(float scale) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return scale * (2.0f * (float)((state >> 40) / 16777216.0) - 1.0f);
}
static void fill(float *p, int n, float offset, float scale) {
  for (int i = 0; i < n; ++i)
    p[i] = offset + uniform(scale);
}

/* --- the double-precision reference --------------------------------- */

static int bf16Weights; /* argv[4] == "bf16" or "bf16x" */
static int bf16Inputs;  /* argv[4] == "bf16x" */

/* `f` rounded to bf16 (8 significant bits), to nearest even. */
static double roundedToBf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* y[r][o] = sum_i x[r][i] w[o][i] + b[o] (w in bf16 with bf16Weights, x
 * too with bf16Inputs) */
static void linear(const double *in, int rows, int nin, const float *w,
                   const float *b, int nout, double *out) {
  for (int r = 0; r < rows; ++r)
    for (int o = 0; o < nout; ++o) {
      double s = b[o];
      for (int i = 0; i < nin; ++i)
        s += (bf16Inputs ? roundedToBf16((float)in[r * nin + i])
                         : in[r * nin + i]) *
             (bf16Weights ? roundedToBf16(w[o * nin + i])
                          : (double)w[o * nin + i]);
      out[r * nout + o] = s;
    }
}

static void layerNorm(double *h, int rows, const float *w, const float *b) {
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < DM; ++c)
      mean += h[r * DM + c] / DM;
    for (int c = 0; c < DM; ++c)
      var += (h[r * DM + c] - mean) * (h[r * DM + c] - mean) / DM;
    for (int c = 0; c < DM; ++c)
      h[r * DM + c] = (h[r * DM + c] - mean) / sqrt(var + 1e-5) * w[c] + b[c];
  }
}

/* One post-norm encoder layer on h [B * L][DM], in place. */
static void referenceLayer(const Layer *w, double *h) {
  enum { ROWS = B * L };
  static double q[ROWS][H * HD], k[ROWS][HKV * HD], v[ROWS][HKV * HD];
  static double heads[ROWS][H * HD], t[ROWS][DM], up[ROWS][FF];
  linear(h, ROWS, DM, &w->qw[0][0], w->qb, H * HD, &q[0][0]);
  linear(h, ROWS, DM, &w->kw[0][0], w->kb, HKV * HD, &k[0][0]);
  linear(h, ROWS, DM, &w->vw[0][0], w->vb, HKV * HD, &v[0][0]);
  /* bf16x: the attention kernel takes q, k and v in bf16 (its result is
   * rounded too, as the output projection's input already is here). */
  if (bf16Inputs) {
    for (int e = 0; e < ROWS * H * HD; ++e)
      (&q[0][0])[e] = roundedToBf16((float)(&q[0][0])[e]);
    for (int e = 0; e < ROWS * HKV * HD; ++e) {
      (&k[0][0])[e] = roundedToBf16((float)(&k[0][0])[e]);
      (&v[0][0])[e] = roundedToBf16((float)(&v[0][0])[e]);
    }
  }
  /* softmax(q k^T / sqrt(HD)) v per sequence and head; query head hq reads
   * key/value head hq / (H / HKV). */
  for (int b = 0; b < B; ++b)
    for (int hq = 0; hq < H; ++hq) {
      int hk = hq / (H / HKV);
      for (int i = 0; i < L; ++i) {
        double s[L], top = -INFINITY, sum = 0;
        for (int j = 0; j < L; ++j) {
          s[j] = 0;
          for (int c = 0; c < HD; ++c)
            s[j] += q[b * L + i][hq * HD + c] * k[b * L + j][hk * HD + c];
          s[j] /= sqrt((double)HD);
          top = s[j] > top ? s[j] : top;
        }
        for (int j = 0; j < L; ++j)
          sum += s[j] = exp(s[j] - top);
        for (int c = 0; c < HD; ++c) {
          double o = 0;
          for (int j = 0; j < L; ++j)
            o += s[j] * v[b * L + j][hk * HD + c];
          heads[b * L + i][hq * HD + c] = o / sum;
        }
      }
    }
  linear(&heads[0][0], ROWS, H * HD, &w->ow[0][0], w->ob, DM, &t[0][0]);
  for (int e = 0; e < ROWS * DM; ++e)
    h[e] += (&t[0][0])[e];
  layerNorm(h, ROWS, w->n1w, w->n1b);
  linear(h, ROWS, DM, &w->f1w[0][0], w->f1b, FF, &up[0][0]);
  for (int e = 0; e < ROWS * FF; ++e) {
    double u = (&up[0][0])[e];
    (&up[0][0])[e] = 0.5 * u * (1 + erf(u / sqrt(2.0)));
  }
  linear(&up[0][0], ROWS, FF, &w->f2w[0][0], w->f2b, DM, &t[0][0]);
  for (int e = 0; e < ROWS * DM; ++e)
    h[e] += (&t[0][0])[e];
  layerNorm(h, ROWS, w->n2w, w->n2b);
}

/* --- the C API ------------------------------------------------------- */

/* A tensor holding a copy of `n` floats of `data`. */
static attn_tensor *tensorOf(const float *data, int rank, const int64_t *sizes) {
  attn_tensor *t = attn_tensor_create(ATTN_F32, rank, sizes);
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    n *= sizes[d];
  memcpy(attn_tensor_data(t), data, n * sizeof(float));
  return t;
}

enum { PER_LAYER = 16, WEIGHTS = LAYERS * PER_LAYER };
static char names[WEIGHTS][64];
static const char *namePointers[WEIGHTS];
static attn_tensor *tensors[WEIGHTS];

static void addWeight(int *n, int layer, const char *name, const float *data,
                      int64_t rows, int64_t cols) {
  int64_t sizes[2] = {rows, cols};
  snprintf(names[*n], sizeof names[*n], "layers.%d.%s", layer, name);
  namePointers[*n] = names[*n];
  tensors[*n] = tensorOf(data, cols ? 2 : 1, sizes);
  ++*n;
}

static int collectWeights(void) {
  int n = 0;
  for (int i = 0; i < LAYERS; ++i) {
    Layer *w = &layers[i];
    addWeight(&n, i, "self_attn.q_proj.weight", &w->qw[0][0], H * HD, DM);
    addWeight(&n, i, "self_attn.q_proj.bias", w->qb, H * HD, 0);
    addWeight(&n, i, "self_attn.k_proj.weight", &w->kw[0][0], HKV * HD, DM);
    addWeight(&n, i, "self_attn.k_proj.bias", w->kb, HKV * HD, 0);
    addWeight(&n, i, "self_attn.v_proj.weight", &w->vw[0][0], HKV * HD, DM);
    addWeight(&n, i, "self_attn.v_proj.bias", w->vb, HKV * HD, 0);
    addWeight(&n, i, "self_attn.o_proj.weight", &w->ow[0][0], DM, H * HD);
    addWeight(&n, i, "self_attn.o_proj.bias", w->ob, DM, 0);
    addWeight(&n, i, "norm1.weight", w->n1w, DM, 0);
    addWeight(&n, i, "norm1.bias", w->n1b, DM, 0);
    addWeight(&n, i, "norm2.weight", w->n2w, DM, 0);
    addWeight(&n, i, "norm2.bias", w->n2b, DM, 0);
    addWeight(&n, i, "linear1.weight", &w->f1w[0][0], FF, DM);
    addWeight(&n, i, "linear1.bias", w->f1b, FF, 0);
    addWeight(&n, i, "linear2.weight", &w->f2w[0][0], DM, FF);
    addWeight(&n, i, "linear2.bias", w->f2b, DM, 0);
  }
  return n;
}

/* Writes the weights as an F32 safetensors file (8-byte little-endian
 * header length, JSON header, data), the format's own layout. */
static int writeSafetensors(const char *path, int count) {
  static char header[16384];
  int used = snprintf(header, sizeof header, "{");
  uint64_t offset = 0;
  for (int i = 0; i < count; ++i) {
    int64_t rows = attn_tensor_size(tensors[i], 0);
    int64_t cols = attn_tensor_rank(tensors[i]) == 2
                       ? attn_tensor_size(tensors[i], 1)
                       : 1;
    uint64_t bytes = (uint64_t)(rows * cols) * 4;
    char shape[64];
    if (attn_tensor_rank(tensors[i]) == 2)
      snprintf(shape, sizeof shape, "[%lld, %lld]", (long long)rows,
               (long long)cols);
    else
      snprintf(shape, sizeof shape, "[%lld]", (long long)rows);
    used += snprintf(header + used, sizeof header - used,
                     "%s\"%s\": {\"dtype\": \"F32\", \"shape\": %s, "
                     "\"data_offsets\": [%llu, %llu]}",
                     i ? ", " : "", names[i], shape,
                     (unsigned long long)offset,
                     (unsigned long long)(offset + bytes));
    offset += bytes;
  }
  used += snprintf(header + used, sizeof header - used, "}");
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  unsigned char length[8];
  for (int b = 0; b < 8; ++b)
    length[b] = (unsigned char)(((uint64_t)used >> (8 * b)) & 0xff);
  fwrite(length, 1, 8, f);
  fwrite(header, 1, used, f);
  for (int i = 0; i < count; ++i) {
    int64_t n = attn_tensor_size(tensors[i], 0) *
                (attn_tensor_rank(tensors[i]) == 2
                     ? attn_tensor_size(tensors[i], 1)
                     : 1);
    fwrite(attn_tensor_data(tensors[i]), 4, n, f); /* little-endian host */
  }
  return fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s STACK.so KERNEL.so WEIGHTS.safetensors [bf16|bf16x]\n",
            argv[0]);
    return 2;
  }
  bf16Inputs = argc > 4 && strcmp(argv[4], "bf16x") == 0;
  bf16Weights = bf16Inputs || (argc > 4 && strcmp(argv[4], "bf16") == 0);
  for (int i = 0; i < LAYERS; ++i) {
    Layer *w = &layers[i];
    /* Weights scaled by 1/sqrt(fan-in), as initializers do: activations
     * stay O(1) through both layers. */
    fill(&w->qw[0][0], H * HD * DM, 0, 0.3f);
    fill(&w->kw[0][0], HKV * HD * DM, 0, 0.3f);
    fill(&w->vw[0][0], HKV * HD * DM, 0, 0.3f);
    fill(&w->ow[0][0], DM * H * HD, 0, 0.3f);
    fill(&w->f1w[0][0], FF * DM, 0, 0.3f);
    fill(&w->f2w[0][0], DM * FF, 0, 0.25f);
    fill(w->qb, H * HD, 0, 0.1f);
    fill(w->kb, HKV * HD, 0, 0.1f);
    fill(w->vb, HKV * HD, 0, 0.1f);
    fill(w->ob, DM, 0, 0.1f);
    fill(w->f1b, FF, 0, 0.1f);
    fill(w->f2b, DM, 0, 0.1f);
    fill(w->n1w, DM, 1, 0.2f);
    fill(w->n1b, DM, 0, 0.1f);
    fill(w->n2w, DM, 1, 0.2f);
    fill(w->n2b, DM, 0, 0.1f);
  }
  fill(&x[0][0][0], B * L * DM, 0, 1);

  /* Reference: x plus the sinusoidal encoding (sin on even, cos on odd
   * entries), then the layers. */
  static double h[B * L * DM];
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < L; ++t)
      for (int c = 0; c < DM; ++c) {
        double angle = t / pow(10000.0, (double)(c - c % 2) / DM);
        h[(b * L + t) * DM + c] =
            x[b][t][c] + (c % 2 == 0 ? sin(angle) : cos(angle));
      }
  for (int i = 0; i < LAYERS; ++i)
    referenceLayer(&layers[i], h);

  attn_artifact *artifact = attn_artifact_load(argv[1]);
  int count = collectWeights();
  attn_stack *stack =
      artifact ? attn_stack_create(artifact, namePointers, tensors, count)
               : NULL;
  if (!stack) {
    printf("stack: %s\n", attn_last_error());
    return 1;
  }
  int64_t shape[3] = {B, L, DM};
  attn_tensor *in = tensorOf(&x[0][0][0], 3, shape);
  attn_tensor *out = attn_tensor_create(ATTN_F32, 3, shape);
  if (attn_stack_forward(stack, in, NULL, out) != 0) {
    printf("forward: %s\n", attn_last_error());
    return 1;
  }
  /* f32 against f64: sums of at most 48 products, online softmax, an
   * erf within 1.5e-7, through two layers whose norms keep values O(1):
   * errors stay near 1e-5. 1e-3 leaves room for summation order and still
   * catches a wrong head mapping, norm or residual (errors of O(0.1)).
   * With bf16x the stack rounds its f32 values (products' x; q, k, v),
   * the reference its f64 ones: where they straddle a rounding boundary
   * one value lands a bf16 step (2^-8 of it, values O(1)) apart, times a
   * weight up to 0.3 or a softmax weight, and a handful of such elements
   * pass through both layers (3.5e-3 observed); 6e-3 covers that and still
   * catches a stack that left x or q, k, v unrounded (1.2e-2) and the
   * O(0.1) errors. */
  double bound = bf16Inputs ? 6e-3 : 1e-3;
  const float *y = (const float *)attn_tensor_data(out);
  double worst = 0;
  for (int e = 0; e < B * L * DM; ++e) {
    double diff = fabs((double)y[e] - h[e]);
    worst = isnan(diff) ? INFINITY : diff > worst ? diff : worst;
  }
  printf("stack: %d layers, output [%d %d %d], max error %.2e: %s\n", LAYERS,
         B, L, DM, worst, worst <= bound ? "PASS" : "FAIL");

  /* The same call again: an encoder keeps nothing between calls. */
  attn_tensor *again = attn_tensor_create(ATTN_F32, 3, shape);
  attn_stack_forward(stack, in, NULL, again);
  printf("repeat: %s\n",
         memcmp(attn_tensor_data(again), y, sizeof x) ? "DIFFERS" : "same");

  /* The same weights from a safetensors file (attn_stack_load): the same
   * numbers, bit for bit. */
  attn_stack *loaded = NULL;
  if (writeSafetensors(argv[3], count) == 0)
    loaded = attn_stack_load(artifact, argv[3]);
  attn_tensor *fromFile = attn_tensor_create(ATTN_F32, 3, shape);
  if (!loaded || attn_stack_forward(loaded, in, NULL, fromFile) != 0)
    printf("load: %s\n", attn_last_error());
  else
    printf("load: %s\n", memcmp(attn_tensor_data(fromFile), y, sizeof x)
                              ? "DIFFERS from attn_stack_create"
                              : "same as attn_stack_create");
  attn_stack_release(loaded);
  attn_tensor_release(fromFile);
  if (!attn_stack_load(artifact, "/nonexistent/w.safetensors"))
    printf("missing file: %s\n", attn_last_error());

  /* Errors: a wrong input width, a missing weight, a wrong shape, and a
   * library without a layer manifest. */
  int64_t wide[3] = {B, L, DM + 1};
  attn_tensor *bad = attn_tensor_create(ATTN_F32, 3, wide);
  if (attn_stack_forward(stack, bad, NULL, bad) != 0)
    printf("bad input: %s\n", attn_last_error());
  if (!attn_stack_create(artifact, namePointers, tensors, count - 1))
    printf("missing weight: %s\n", attn_last_error());
  attn_tensor *saved = tensors[0];
  tensors[0] = tensors[2];
  if (!attn_stack_create(artifact, namePointers, tensors, count))
    printf("wrong shape: %s\n", attn_last_error());
  tensors[0] = saved;
  attn_artifact *kernelOnly = attn_artifact_load(argv[2]);
  if (!attn_stack_create(kernelOnly, namePointers, tensors, count))
    printf("no manifest: %s\n", attn_last_error());

  /* The stack keeps its artifact: releasing the artifact first is safe and
   * the stack runs on (it was a use after free, a SIGSEGV). */
  attn_artifact_release(kernelOnly);
  attn_artifact_release(artifact);
  attn_tensor *late = attn_tensor_create(ATTN_F32, 3, shape);
  if (attn_stack_forward(stack, in, NULL, late) == 0)
    printf("after the artifact's release: %s\n",
           memcmp(attn_tensor_data(late), y, sizeof x) ? "DIFFERS" : "same");
  attn_tensor_release(late);
  attn_stack_release(stack);
  attn_tensor_release(in);
  attn_tensor_release(out);
  attn_tensor_release(again);
  attn_tensor_release(bad);
  for (int i = 0; i < count; ++i)
    attn_tensor_release(tensors[i]);
  return worst <= bound ? 0 : 1;
}
