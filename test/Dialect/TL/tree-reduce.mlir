// RUN: llm-opt %s -split-input-file -verify-diagnostics \
// RUN:   -tl-schedule='script={split(mv, 1, 8); rfactor(mv, 2); tree_reduce(mv)}' | FileCheck %s

// The 8 partials are combined in a halving tree, in place (lane i += lane
// i + 4, then i + 2, then i + 1), and lane 0 goes into the output after its
// init: the order of a SIMD horizontal sum.
// CHECK-LABEL: func.func @mv
// CHECK: %[[RF:[a-z0-9_]+]] = memref.alloca() {{.*}} : memref<8xf32>
// CHECK: tl.block "mv_rf"
// CHECK: tl.block "mv_tree0" (%{{.+}}, %[[I0:[a-z0-9_]+]] = spatial %{{.+}}) reads(%[[RF]][%[[I0]]] : memref<8xf32>, %[[RF]][%[[I0]] + 4] : memref<8xf32>) writes(%[[RF]][%[[I0]]]
// CHECK: arith.addf
// CHECK: tl.block "mv_tree1" (%{{.+}}, %[[I1:[a-z0-9_]+]] = spatial %{{.+}}) reads(%[[RF]][%[[I1]]] : memref<8xf32>, %[[RF]][%[[I1]] + 2] : memref<8xf32>)
// CHECK: tl.block "mv_tree2" (%{{.+}}, %[[I2:[a-z0-9_]+]] = spatial %{{.+}}) reads(%[[RF]][%[[I2]]] : memref<8xf32>, %[[RF]][%[[I2]] + 1] : memref<8xf32>)
// CHECK: tl.block "mv" (%[[N:[a-z0-9_]+]] = spatial %{{.+}}) reads(%{{.+}}[%[[N]]] : memref<8xf32>, %[[RF]][0] : memref<8xf32>) writes
// CHECK-NEXT: arith.constant 0.0
// CHECK-NEXT: affine.store
// CHECK-NEXT: affine.load
// CHECK-NEXT: affine.load %[[RF]][0]
// CHECK-NEXT: arith.addf
// CHECK-NOT: reduce
func.func @mv(%x: memref<64xf32>, %w: memref<8x64xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  tl.for %n = %c0 to %c8 step %c1 {
    tl.for %k = %c0 to %c64 step %c1 {
      tl.block "mv" (%vn = spatial %n, %vk = reduce %k)
          reads(%x[%vk] : memref<64xf32>, %w[%vn, %vk] : memref<8x64xf32>, %y[%vn] : memref<8xf32>)
          writes(%y[%vn] : memref<8xf32>) init {
        %z = arith.constant 0.0 : f32
        affine.store %z, %y[%vn] : memref<8xf32>
      } {
        %a = affine.load %x[%vk] : memref<64xf32>
        %b = affine.load %w[%vn, %vk] : memref<8x64xf32>
        %s = affine.load %y[%vn] : memref<8xf32>
        %p = arith.mulf %a, %b : f32
        %r = arith.addf %s, %p : f32
        affine.store %r, %y[%vn] : memref<8xf32>
      }
    }
  }
  return
}
