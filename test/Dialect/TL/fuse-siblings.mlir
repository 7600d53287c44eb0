// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={fuse_siblings(a, 0, b, 0)}' | FileCheck %s

// Two loops over the heads, the second reading the rows the first wrote
// (each head its own row): one loop, each head's two blocks in turn. The
// index arithmetic between them moves before the fused loop, in its order
// (the second op uses the first).
// CHECK-LABEL: func.func @heads
// CHECK: %[[E:.+]] = arith.addi %arg3
// CHECK-NEXT: arith.addi %[[E]]
// CHECK-NEXT: tl.for %[[H:.+]] = %{{.+}} to %c4
// CHECK: tl.block "a"
// CHECK: tl.block "b"
// CHECK-NOT: tl.for %{{.+}} = %{{.+}} to %c4
// CHECK: return
func.func @heads(%x: memref<4x8xf32>, %s: memref<4x8xf32>, %y: memref<4x8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %h = %c0 to %c4 step %c1 {
    tl.for %t = %c0 to %c8 step %c1 {
      tl.block "a" (%vh = spatial %h, %vt = spatial %t) reads(%x[%vh, %vt] : memref<4x8xf32>)
          writes(%s[%vh, %vt] : memref<4x8xf32>) {
        %v = affine.load %x[%vh, %vt] : memref<4x8xf32>
        affine.store %v, %s[%vh, %vt] : memref<4x8xf32>
      }
    }
  }
  %e = arith.addi %n, %c1 : index
  %e2 = arith.addi %e, %c1 : index
  tl.for %h = %c0 to %c4 step %c1 {
    tl.for %t = %c0 to %c8 step %c1 {
      tl.block "b" (%vh = spatial %h, %vt = spatial %t) reads(%s[%vh, 7 - %vt] : memref<4x8xf32>)
          writes(%y[%vh, %vt] : memref<4x8xf32>) {
        %v = affine.load %s[%vh, 7 - %vt] : memref<4x8xf32>
        affine.store %v, %y[%vh, %vt] : memref<4x8xf32>
      }
    }
  }
  return
}

// -----

// Head h of the second loop reads the row head h + 1 of the first writes:
// fused, head h would read it before it is written.
func.func @next_head(%x: memref<5x8xf32>, %s: memref<5x8xf32>, %y: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{fuseSiblings: the fused loop's iterations would not be independent}}
  tl.for %h = %c0 to %c4 step %c1 {
    tl.for %t = %c0 to %c8 step %c1 {
      tl.block "a" (%vh = spatial %h, %vt = spatial %t) reads(%x[%vh, %vt] : memref<5x8xf32>)
          writes(%s[%vh, %vt] : memref<5x8xf32>) {
        %v = affine.load %x[%vh, %vt] : memref<5x8xf32>
        affine.store %v, %s[%vh, %vt] : memref<5x8xf32>
      }
    }
  }
  tl.for %h = %c0 to %c4 step %c1 {
    tl.for %t = %c0 to %c8 step %c1 {
      tl.block "b" (%vh = spatial %h, %vt = spatial %t) reads(%s[%vh + 1, %vt] : memref<5x8xf32>)
          writes(%y[%vh, %vt] : memref<4x8xf32>) {
        %v = affine.load %s[%vh + 1, %vt] : memref<5x8xf32>
        affine.store %v, %y[%vh, %vt] : memref<4x8xf32>
      }
    }
  }
  return
}
