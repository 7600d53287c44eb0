// RUN: llm-opt %s -split-input-file -tl-schedule='script={expand(sum, 0, 1); distribute(sum, 1)}' | FileCheck %s

// A token loop split into tiles of 4 (t = t0 * 4 + t1), each token summing
// its row into a stack buffer and storing it: the buffer, made per token
// in t1's body, becomes one per tile with a slice per token (t mod 4), so
// that t1 can then be distributed over the sum's nest and the store (each
// token's slice its own: the iterations stay independent).
// CHECK-LABEL: func.func @tile
// CHECK: tl.for %[[T0:.+]] = %{{.+}} to %c2
// CHECK-NEXT: %[[ACC:.+]] = memref.alloca() {alignment = 64 : i64} : memref<4x1xf32>
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4
// CHECK: tl.block "sum" (%[[V:.+]] = spatial %{{.+}}, %{{.+}} = reduce %{{.+}}) reads(%{{.+}}, %[[ACC]][%[[V]] mod 4, 0] : memref<4x1xf32>) writes(%[[ACC]][%[[V]] mod 4, 0] : memref<4x1xf32>) init {
// CHECK: affine.store %{{.+}}, %[[ACC]][symbol(%[[V]]) mod 4, 0]
// CHECK: tl.for %{{.+}} = %{{.+}} to %c4
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.addi
// CHECK-NEXT: tl.block "out" (%[[W:.+]] = spatial %{{.+}}) reads(%[[ACC]][%[[W]] mod 4, 0] : memref<4x1xf32>)
func.func @tile(%x: memref<8x4xf32>, %o: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  tl.for %t0 = %c0 to %c2 step %c1 {
    tl.for %t1 = %c0 to %c4 step %c1 {
      %b = arith.muli %t0, %c4 : index
      %t = arith.addi %b, %t1 : index
      %acc = memref.alloca() {alignment = 64 : i64} : memref<1xf32>
      tl.for %k = %c0 to %c4 step %c1 {
        tl.block "sum" (%v = spatial %t, %vk = reduce %k) reads(%x[%v, %vk] : memref<8x4xf32>, %acc[0] : memref<1xf32>) writes(%acc[0] : memref<1xf32>) init {
          %z = arith.constant 0.0 : f32
          affine.store %z, %acc[0] : memref<1xf32>
        } {
          %a = affine.load %x[symbol(%v), symbol(%vk)] : memref<8x4xf32>
          %s = affine.load %acc[0] : memref<1xf32>
          %n = arith.addf %a, %s : f32
          affine.store %n, %acc[0] : memref<1xf32>
        }
      }
      tl.block "out" (%v = spatial %t) reads(%acc[0] : memref<1xf32>) writes(%o[%v] : memref<8xf32>) {
        %a = affine.load %acc[0] : memref<1xf32>
        affine.store %a, %o[symbol(%v)] : memref<8xf32>
      }
    }
  }
  return
}

// -----

// The tile's first token (t0 * 4) computed outside the tile's loop, as
// splitPeel and hoisting leave it: the slice is still t mod 4 (the index
// analysis reads through the hoisted product).
// CHECK-LABEL: func.func @hoisted_base
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<4x1xf32>
// CHECK: tl.block "sum" (%[[V:.+]] = spatial %{{.+}}, %{{.+}} = reduce %{{.+}}) reads(%{{.+}}, %{{.+}}[%[[V]] mod 4, 0] : memref<4x1xf32>)
// CHECK: tl.block "out" (%[[W:.+]] = spatial %{{.+}}) reads(%{{.+}}[%[[W]] mod 4, 0] : memref<4x1xf32>)
func.func @hoisted_base(%x: memref<8x4xf32>, %o: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  tl.for %t0 = %c0 to %c2 step %c1 {
    %b = arith.muli %t0, %c4 : index
    tl.for %t1 = %c0 to %c4 step %c1 {
      %t = arith.addi %b, %t1 : index
      %acc = memref.alloca() {alignment = 64 : i64} : memref<1xf32>
      tl.for %k = %c0 to %c4 step %c1 {
        tl.block "sum" (%v = spatial %t, %vk = reduce %k) reads(%x[%v, %vk] : memref<8x4xf32>, %acc[0] : memref<1xf32>) writes(%acc[0] : memref<1xf32>) init {
          %z = arith.constant 0.0 : f32
          affine.store %z, %acc[0] : memref<1xf32>
        } {
          %a = affine.load %x[symbol(%v), symbol(%vk)] : memref<8x4xf32>
          %s = affine.load %acc[0] : memref<1xf32>
          %n = arith.addf %a, %s : f32
          affine.store %n, %acc[0] : memref<1xf32>
        }
      }
      tl.block "out" (%v = spatial %t) reads(%acc[0] : memref<1xf32>) writes(%o[%v] : memref<8xf32>) {
        %a = affine.load %acc[0] : memref<1xf32>
        affine.store %a, %o[symbol(%v)] : memref<8xf32>
      }
    }
  }
  return
}
