// The fused kernel never materializes the L x L scores: at L = 32768 a
// score matrix alone would be 4 GiB of f32. Q, K, V and O are 8 MiB each,
// and the JIT plus MLIR take about 100 MiB; 512 MiB leaves ample room while
// failing any implementation that allocates O(L^2).
// RUN: python3 %S/Inputs/max-rss.py attn-run %s | FileCheck %s
// CHECK: exit 0, peak RSS {{[0-9]{2}|[1-4][0-9]{2}|50[0-9]|51[01]}} MiB
func.func @long(%q: tensor<1x1x32768x64xf32>, %k: tensor<1x1x32768x64xf32>,
                %v: tensor<1x1x32768x64xf32>) -> tensor<1x1x32768x64xf32> {
  %o = attn.attention %q, %k, %v pattern(#attn.causal)
      : (tensor<1x1x32768x64xf32>, tensor<1x1x32768x64xf32>,
         tensor<1x1x32768x64xf32>) -> tensor<1x1x32768x64xf32>
  return %o : tensor<1x1x32768x64xf32>
}
