// RUN: llm-opt %s -tl-schedule='script={split(mv, 1, 8); rfactor(mv, 2); tree_reduce(mv, 4)}' | FileCheck %s

// With a segment of 4, the 8 partials are two runs of 4 lanes (two vector
// accumulators), each reduced by its own halving tree (the levels loop over
// the runs too); "mv" keeps a reduction over the runs, adding lane 0 of each
// in order after its init.
// CHECK-LABEL: func.func @mv
// CHECK: %[[RF:[a-z0-9_]+]] = memref.alloca() {{.*}} : memref<8xf32>
// CHECK: tl.block "mv_rf"
// CHECK: tl.block "mv_tree0" (%{{.+}}, %[[S0:[a-z0-9_]+]] = spatial %{{.+}}, %[[I0:[a-z0-9_]+]] = spatial %{{.+}}) reads(%[[RF]][%[[S0]] * 4 + %[[I0]]] : memref<8xf32>, %[[RF]][%[[S0]] * 4 + %[[I0]] + 2] : memref<8xf32>)
// CHECK: tl.block "mv_tree1" (%{{.+}}, %[[S1:[a-z0-9_]+]] = spatial %{{.+}}, %[[I1:[a-z0-9_]+]] = spatial %{{.+}}) reads(%[[RF]][%[[S1]] * 4 + %[[I1]]] : memref<8xf32>, %[[RF]][%[[S1]] * 4 + %[[I1]] + 1] : memref<8xf32>)
// CHECK-NOT: mv_tree2
// CHECK: %[[C2:.+]] = arith.constant 2 : index
// CHECK: tl.for %[[G:[a-z0-9_]+]] = %{{.+}} to %[[C2]]
// CHECK-NEXT: tl.block "mv" (%{{.+}} = spatial %{{.+}}, %[[R:[a-z0-9_]+]] = reduce %[[G]]) reads(%{{.+}}, %[[RF]][%[[R]] * 4] : memref<8xf32>)
// CHECK: affine.load %[[RF]][%[[R]] * 4]
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
