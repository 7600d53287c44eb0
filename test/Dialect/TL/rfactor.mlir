// RUN: llm-opt %s -split-input-file -verify-diagnostics \
// RUN:   -tl-schedule='script={split(mv, 1, 16); rfactor(mv, 2)}' | FileCheck %s

// A dot product per row, factored over 16 lanes: the partials get a stack
// buffer before the reduction, start at 0, accumulate per lane (the lane
// loop now binds a spatial variable), and are added into the output, after
// its init, in lane order.
// CHECK-LABEL: func.func @mv
// CHECK: tl.for %[[N:[a-z0-9_]+]] = {{.*}} {
// CHECK: %[[RF:[a-z0-9_]+]] = memref.alloca() {alignment = 64 : i64} : memref<16xf32>
// CHECK: tl.block "mv_rf_init" (%[[L0:[a-z0-9_]+]] = spatial %{{.+}}) reads() writes(%[[RF]][%[[L0]]]
// CHECK: arith.constant 0.000000e+00
// CHECK: tl.for %[[K0:[a-z0-9_]+]] =
// CHECK: tl.for %[[K1:[a-z0-9_]+]] =
// CHECK: tl.block "mv_rf" (%[[VN:[a-z0-9_]+]] = spatial %[[N]], %[[VK:[a-z0-9_]+]] = reduce %{{.+}}, %[[VL:[a-z0-9_]+]] = spatial %[[K1]])
// CHECK-SAME: reads(%{{.+}}[%[[VK]] + %[[VL]]] : memref<64xf32>, %{{.+}}[%[[VN]], %[[VK]] + %[[VL]]] : memref<8x64xf32>, %[[RF]][%[[VL]]] : memref<16xf32>)
// CHECK-SAME: writes(%[[RF]][%[[VL]]] : memref<16xf32>)
// CHECK-NOT: init
// CHECK: tl.for %[[L:[a-z0-9_]+]] =
// CHECK: tl.block "mv" (%[[WN:[a-z0-9_]+]] = spatial %[[N]], %[[WL:[a-z0-9_]+]] = reduce %[[L]])
// CHECK-SAME: writes(%{{.+}}[%[[WN]]] : memref<8xf32>) init {
// CHECK: affine.load %[[RF]][%[[WL]]]
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
