// RUN: llm-opt %s -tl-schedule='script={split(matmul, 0, 8); split(matmul, 3, 64); reorder(matmul, 0, 3, 1, 2, 4); stage(matmul, 0, 1)}' | FileCheck %s

// A matmul's tokens in tiles of 8, its products in chunks of 64, the chunk
// loop outside the tile's: each iteration of the chunk loop reads an 8x64
// region of x, which is staged in a stack buffer at the start of the
// chunk's body (filled row-major from the region's start, tile * 8 and
// chunk * 64); the matmul reads it through two variables added for the
// offsets in the region (the tile's token, spatial; the chunk's product,
// a reduction variable), not x.
// CHECK-LABEL: func.func @tile
// CHECK: tl.for %[[T:.+]] = %{{.+}} to %c2
// CHECK-NEXT: tl.for %[[K:.+]] = %{{.+}} to %c4
// CHECK-NEXT: %[[S:.+]] = memref.alloca() {alignment = 64 : i64} : memref<8x64xf32>
// CHECK: %[[R0:.+]] = affine.apply #{{.+}}(%[[T]], %[[K]])
// CHECK: %[[C0:.+]] = affine.apply #{{.+}}(%[[T]], %[[K]])
// CHECK: tl.for %[[I:.+]] = %{{.+}} to %c8
// CHECK-NEXT: %[[R:.+]] = arith.addi %[[R0]], %[[I]]
// CHECK: tl.for %[[J:.+]] = %{{.+}} to %c64
// CHECK-NEXT: %[[C:.+]] = arith.addi %[[C0]], %[[J]]
// CHECK-NEXT: tl.block "matmul_stage" (%[[A:.+]] = spatial %[[R]], %[[B:.+]] = spatial %[[C]], %[[AI:.+]] = spatial %[[I]], %[[BJ:.+]] = spatial %[[J]]) reads(%arg0[%[[A]], %[[B]]] : memref<16x256xf32>) writes(%[[S]][%[[AI]], %[[BJ]]] : memref<8x64xf32>)
// CHECK: tl.for %[[TT:.+]] = %{{.+}} to %c8
// CHECK: tl.for %[[KK:.+]] = %{{.+}} to %c64
// CHECK: tl.block "matmul" ({{.*}}, %[[OT:.+]] = spatial %[[TT]], %[[OK:.+]] = reduce %[[KK]]) reads(%[[S]][%[[OT]], %[[OK]]] : memref<8x64xf32>, %arg1
// CHECK: affine.load %[[S]][symbol(%[[OT]]), symbol(%[[OK]])]
// CHECK-NOT: affine.load %arg0
func.func @tile(%x: memref<16x256xf32>, %w: memref<32x256xf32>, %y: memref<16x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  tl.for %t = %c0 to %c16 step %c1 {
    tl.for %o = %c0 to %c32 step %c1 {
      tl.for %k = %c0 to %c256 step %c1 {
        tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vk = reduce %k) reads(%x[%vt, %vk] : memref<16x256xf32>, %w[%vo, %vk] : memref<32x256xf32>, %y[%vt, %vo] : memref<16x32xf32>) writes(%y[%vt, %vo] : memref<16x32xf32>) init {
          affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<16x32xf32>
        } {
          %0 = affine.load %x[symbol(%vt), symbol(%vk)] : memref<16x256xf32>
          %1 = affine.load %w[symbol(%vo), symbol(%vk)] : memref<32x256xf32>
          %2 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<16x32xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %y[symbol(%vt), symbol(%vo)] : memref<16x32xf32>
        }
      }
    }
  }
  return
}
