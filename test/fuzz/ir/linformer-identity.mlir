func.func @identity(%q: tensor<1x2x97x40xf32>, %k: tensor<1x2x97x40xf32>,
                    %v: tensor<1x2x97x40xf32>, %e: tensor<97x97xf32>,
                    %f: tensor<97x97xf32>) -> tensor<1x2x97x40xf32> {
  %o = attn.linformer %q, %k, %v proj(%e, %f)
      : (tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>, tensor<1x2x97x40xf32>,
         tensor<97x97xf32>, tensor<97x97xf32>) -> tensor<1x2x97x40xf32>
  return %o : tensor<1x2x97x40xf32>
}
