// RUN: attn-opt %s --attn-fourier-mix-to-call | FileCheck %s

// The op becomes a call of the runtime's FFT on the input's buffer and a
// fresh aligned output buffer, both cast to the one dynamic signature,
// declared once (C interface) for both ops.
// CHECK-LABEL: func.func @two_mixes
// CHECK-SAME: (%[[X:.*]]: tensor<2x97x64xf32>)
// CHECK: %[[IN:.*]] = bufferization.to_buffer %[[X]] read_only : tensor<2x97x64xf32> to memref<2x97x64xf32>
// CHECK: %[[INC:.*]] = memref.cast %[[IN]] : memref<2x97x64xf32> to memref<?x?x?xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x97x64xf32>
// CHECK: %[[OUTC:.*]] = memref.cast %[[OUT]] : memref<2x97x64xf32> to memref<?x?x?xf32>
// CHECK: call @attn_fourier_mix_f32(%[[INC]], %[[OUTC]]) : (memref<?x?x?xf32>, memref<?x?x?xf32>) -> ()
// CHECK: %[[Y:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: call @attn_fourier_mix_f32
// CHECK-NOT: attn.fourier_mix
// CHECK: func.func private @attn_fourier_mix_f32(memref<?x?x?xf32>, memref<?x?x?xf32>) attributes {llvm.emit_c_interface}
// CHECK-NOT: func.func private @attn_fourier_mix_f32
func.func @two_mixes(%x: tensor<2x97x64xf32>) -> tensor<2x97x64xf32> {
  %y = attn.fourier_mix %x : tensor<2x97x64xf32> -> tensor<2x97x64xf32>
  %z = attn.fourier_mix %y : tensor<2x97x64xf32> -> tensor<2x97x64xf32>
  return %z : tensor<2x97x64xf32>
}
