// RUN: llm-opt %s -tl-schedule='script={mma(matmul, 1)}' -tl-verify-parallel | FileCheck %s

// The band of a tile of a larger product (its rows offset by a multiple of
// 16), operands in either order, no init (the sums start at out's values).
// CHECK-LABEL: func.func @tile
// CHECK: tl.for {{.*}} to %c16 step %c1 kind(mma)
// CHECK-NEXT: affine.apply
// CHECK-NEXT: tl.for {{.*}} to %c16 step %c1 kind(mma)
func.func @tile(%a: memref<?x32xf16>, %b: memref<16x32xf16>, %y: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %n = memref.dim %a, %c0 : memref<?x32xf16>
  %tiles = arith.divui %n, %c16 : index
  tl.for %t = %c0 to %tiles step %c1 {
    tl.for %r = %c0 to %c16 step %c1 {
      %row = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%t, %r)
      tl.for %c = %c0 to %c16 step %c1 {
        tl.for %k = %c0 to %c32 step %c1 {
          tl.block "matmul" (%vr = spatial %row, %vc = spatial %c, %vk = reduce %k) reads(%b[%vc, %vk] : memref<16x32xf16>, %a[%vr, %vk] : memref<?x32xf16>, %y[%vr, %vc] : memref<?x16xf32>) writes(%y[%vr, %vc] : memref<?x16xf32>) {
            %0 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
            %1 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<?x32xf16>
            %2 = arith.extf %0 : f16 to f32
            %3 = arith.extf %1 : f16 to f32
            %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<?x16xf32>
            %5 = arith.mulf %2, %3 : f32
            %6 = arith.addf %4, %5 : f32
            affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<?x16xf32>
          }
        }
      }
    }
  }
  return
}
