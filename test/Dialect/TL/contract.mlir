// RUN: llm-opt %s -tl-schedule='script={contract(dot)}' | FileCheck %s

// contract fuses the product and the add of a dot-product update into one
// fma (one rounding): what SIMD kernels accumulate with.
// CHECK-LABEL: func.func @dot
// CHECK: tl.block "dot"
// CHECK: %[[A:.+]] = affine.load %arg0
// CHECK: %[[B:.+]] = affine.load %arg1
// CHECK: %[[S:.+]] = affine.load %arg2
// CHECK-NOT: arith.mulf
// CHECK-NEXT: %[[R:.+]] = math.fma %[[A]], %[[B]], %[[S]] : f32
// CHECK-NEXT: affine.store %[[R]], %arg2
func.func @dot(%x: memref<64xf32>, %w: memref<64xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  tl.for %k = %c0 to %c64 step %c1 {
    tl.block "dot" (%vk = reduce %k)
        reads(%x[%vk] : memref<64xf32>, %w[%vk] : memref<64xf32>, %y[0] : memref<1xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %x[%vk] : memref<64xf32>
      %b = affine.load %w[%vk] : memref<64xf32>
      %s = affine.load %y[0] : memref<1xf32>
      %p = arith.mulf %a, %b : f32
      %r = arith.addf %s, %p : f32
      affine.store %r, %y[0] : memref<1xf32>
    }
  }
  return
}
