// RUN: attn-opt %s --attn-inline-alloca-scopes | FileCheck %s

// A scope whose body only calls (the callee's frame is released on return)
// is inlined.
// CHECK-LABEL: func @call_only
// CHECK-NOT: memref.alloca_scope
// CHECK: call @callee
func.func private @callee()
func.func @call_only() {
  memref.alloca_scope {
    func.call @callee() : () -> ()
  }
  return
}

// A scope that allocates on the stack stays.
// CHECK-LABEL: func @with_alloca
// CHECK: memref.alloca_scope
// CHECK:   memref.alloca
func.func @with_alloca(%x: f32) {
  %c0 = arith.constant 0 : index
  memref.alloca_scope {
    %a = memref.alloca() : memref<4xf32>
    memref.store %x, %a[%c0] : memref<4xf32>
  }
  return
}
