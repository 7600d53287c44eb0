// RUN: llm-opt %s -tl-schedule='script={split(mm, 2, 16); reorder(mm, 2, 0, 1); rfactor_at(mm, 3)}' | FileCheck %s

// rfactor from a root inside the reduction: the reduction over k, blocked
// by 16 with its blocks (kb) outermost, as a cache blocks it, is factored
// from the inner loop k1 on. The partial (one accumulator per output: no
// lanes) starts at 0 before k1 inside the loops over the outputs, and is
// added to the output right after k1: the write-back binds the reduction's
// outer part, kb * 16, as its own reduction variable, so its init (the
// block's, the output's 0) runs only in the first block, every block
// adding its partial.
// CHECK-LABEL: func.func @mm
// CHECK: tl.for %[[KB:[a-z0-9_]+]] =
// CHECK: tl.for %[[S:[a-z0-9_]+]] =
// CHECK: tl.for %[[N:[a-z0-9_]+]] =
// CHECK: %[[RF:[a-z0-9_]+]] = memref.alloca() {alignment = 64 : i64} : memref<1xf32>
// CHECK: tl.block "mm_rf_init"
// CHECK: tl.for %[[K1:[a-z0-9_]+]] =
// CHECK: tl.block "mm_rf" (%{{.+}} = spatial %[[S]], %{{.+}} = spatial %[[N]], %{{.+}} = reduce %{{[0-9]+}})
// CHECK-SAME: writes(%[[RF]]{{\[}}0] : memref<1xf32>) {
// CHECK: }
// CHECK: %[[OUTER:[a-z0-9_]+]] = arith.muli %[[KB]], %{{.+}} overflow<nsw> : index
// CHECK: tl.block "mm" (%[[WS:[a-z0-9_]+]] = spatial %[[S]], %[[WN:[a-z0-9_]+]] = spatial %[[N]], %{{[a-z0-9_]+}} = reduce %[[OUTER]])
// CHECK-SAME: writes(%{{.+}}[%[[WS]], %[[WN]]] : memref<4x8xf32>) init {
// CHECK: affine.store %{{.+}}, %{{.+}}[%[[WS]], %[[WN]]]
// CHECK: } {
// CHECK: %[[CUR:[0-9]+]] = affine.load %{{.+}}[%[[WS]], %[[WN]]]
// CHECK: %[[PART:[0-9]+]] = affine.load %[[RF]]{{\[}}0]
// CHECK: arith.addf %[[CUR]], %[[PART]]
func.func @mm(%x: memref<4x64xf32>, %w: memref<8x64xf32>, %y: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  tl.for %s = %c0 to %c4 step %c1 {
    tl.for %n = %c0 to %c8 step %c1 {
      tl.for %k = %c0 to %c64 step %c1 {
        tl.block "mm" (%vs = spatial %s, %vn = spatial %n, %vk = reduce %k)
            reads(%x[%vs, %vk] : memref<4x64xf32>, %w[%vn, %vk] : memref<8x64xf32>, %y[%vs, %vn] : memref<4x8xf32>)
            writes(%y[%vs, %vn] : memref<4x8xf32>) init {
          %z = arith.constant 0.0 : f32
          affine.store %z, %y[%vs, %vn] : memref<4x8xf32>
        } {
          %a = affine.load %x[%vs, %vk] : memref<4x64xf32>
          %b = affine.load %w[%vn, %vk] : memref<8x64xf32>
          %acc = affine.load %y[%vs, %vn] : memref<4x8xf32>
          %p = arith.mulf %a, %b : f32
          %r = arith.addf %acc, %p : f32
          affine.store %r, %y[%vs, %vn] : memref<4x8xf32>
        }
      }
    }
  }
  return
}
