// RUN: llm-opt %s -tl-schedule='script={stage(matmul, 0, 0)}' | FileCheck %s

// A sliding window (x[t + k], k < 4): each token's region is the 4
// elements from it, staged at each iteration of the token loop; the block
// reads them at k.
// CHECK-LABEL: func.func @window
// CHECK: tl.for %[[T:.+]] = %{{.+}} to %c16
// CHECK-NEXT: %[[S:.+]] = memref.alloca() {alignment = 64 : i64} : memref<4xf32>
// CHECK: writes(%[[S]][%{{.+}}] : memref<4xf32>)
// CHECK: tl.for %[[K:.+]] = %{{.+}} to %c4
// CHECK-NEXT: tl.block "matmul" ({{.*}}, %[[V:.+]] = reduce %[[K]]) reads(%[[S]][%[[V]]] : memref<4xf32>
func.func @window(%x: memref<19xf32>, %y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  tl.for %t = %c0 to %c16 step %c1 {
    tl.for %k = %c0 to %c4 step %c1 {
      tl.block "matmul" (%vt = spatial %t, %vk = reduce %k) reads(%x[%vt + %vk] : memref<19xf32>, %y[%vt] : memref<16xf32>) writes(%y[%vt] : memref<16xf32>) init {
        %z = arith.constant 0.0 : f32
        affine.store %z, %y[symbol(%vt)] : memref<16xf32>
      } {
        %a = affine.load %x[symbol(%vt) + symbol(%vk)] : memref<19xf32>
        %s = affine.load %y[symbol(%vt)] : memref<16xf32>
        %r = arith.addf %s, %a : f32
        affine.store %r, %y[symbol(%vt)] : memref<16xf32>
      }
    }
  }
  return
}
