// RUN: llm-opt %s -split-input-file -tl-schedule='script={distribute(b, 0)}' | FileCheck %s
// RUN: llm-opt %s -split-input-file -tl-schedule='script={bind(b, 0, blockIdx.x); distribute(b, 0)}' | FileCheck %s --check-prefix=BOUND

// A row loop over heads as decode's attention has one: per head, a nest
// writes the head's scores row and a second reads it back (a sum). The
// heads are independent, so the loop becomes two: all heads' rows first,
// then all sums. The index arithmetic the nests use is recomputed in each.
// A loop bound to a GPU axis: each copy keeps its kind and axis.
// BOUND-LABEL: func.func @rows
// BOUND: tl.for %{{.+}} = %{{.+}} to %c4 step %{{.+}} kind(thread_bound) thread("blockIdx.x")
// BOUND: tl.block "a"
// BOUND: tl.for %{{.+}} = %{{.+}} to %c4 step %{{.+}} kind(thread_bound) thread("blockIdx.x")
// BOUND: tl.block "b"
// CHECK-LABEL: func.func @rows
// CHECK: tl.for %[[H1:.+]] = %{{.+}} to %c4
// CHECK-NEXT: %[[B1:.+]] = arith.muli %[[H1]], %c8
// CHECK-NEXT: tl.for
// CHECK-NEXT: arith.addi %[[B1]]
// CHECK-NEXT: tl.block "a"
// CHECK-NOT: tl.block "b"
// CHECK: tl.for %[[H2:.+]] = %{{.+}} to %c4
// CHECK-NEXT: %[[B2:.+]] = arith.muli %[[H2]], %c8
// CHECK-NEXT: tl.for
// CHECK-NEXT: arith.addi %[[B2]]
// CHECK-NEXT: tl.block "b"
// CHECK-NOT: tl.for %{{.+}} = %{{.+}} to %c4
// CHECK: return
func.func @rows(%x: memref<32xf32>, %s: memref<32xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %h = %c0 to %c4 step %c1 {
    %base = arith.muli %h, %c8 : index
    tl.for %i = %c0 to %c8 step %c1 {
      %at = arith.addi %base, %i : index
      tl.block "a" (%v = spatial %at) reads(%x[%v] : memref<32xf32>) writes(%s[%v] : memref<32xf32>) {
        %a = affine.load %x[symbol(%v)] : memref<32xf32>
        %e = math.exp %a : f32
        affine.store %e, %s[symbol(%v)] : memref<32xf32>
      }
    }
    tl.for %i = %c0 to %c8 step %c1 {
      %at = arith.addi %base, %i : index
      tl.block "b" (%vh = spatial %h, %v = reduce %at) reads(%s[%v] : memref<32xf32>, %o[%vh] : memref<4xf32>) writes(%o[%vh] : memref<4xf32>) init {
        %z = arith.constant 0.0 : f32
        affine.store %z, %o[symbol(%vh)] : memref<4xf32>
      } {
        %a = affine.load %s[symbol(%v)] : memref<32xf32>
        %b = affine.load %o[symbol(%vh)] : memref<4xf32>
        %c = arith.addf %a, %b : f32
        affine.store %c, %o[symbol(%vh)] : memref<4xf32>
      }
    }
  }
  return
}
