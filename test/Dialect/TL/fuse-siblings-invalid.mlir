// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={fuse_siblings(a, 0, b, 0)}'
// RUN: not llm-opt %s -split-input-file -tl-schedule='script={fuse_siblings(a, 0, b)}' 2>&1 | FileCheck %s --check-prefix=PAIRS
// RUN: not llm-opt %s -split-input-file -tl-schedule='script={fuse_siblings(a, 0, b, 7)}' 2>&1 | FileCheck %s --check-prefix=LOOP
// RUN: not llm-opt %s -split-input-file -tl-schedule='script={fuse_siblings(b, 0, a, 0)}' 2>&1 | FileCheck %s --check-prefix=ORDER

// PAIRS: tl-schedule: fuse_siblings: needs (block, loop) pairs, at least two
// LOOP: tl-schedule: fuse_siblings: '7' is not a loop of tl.block 'b'
// ORDER: error: fuseSiblings: the loops must be siblings, in order

// A store between the loops would move across them.
func.func @store_between(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  tl.for %h = %c0 to %c4 step %c1 {
    tl.block "a" (%vh = spatial %h) reads() writes(%x[%vh] : memref<4xf32>) {
      affine.store %f, %x[%vh] : memref<4xf32>
    }
  }
  // expected-error @+1 {{fuseSiblings: an op with effects or regions lies between the loops}}
  memref.store %f, %z[%c0] : memref<1xf32>
  tl.for %h = %c0 to %c4 step %c1 {
    tl.block "b" (%vh = spatial %h) reads() writes(%y[%vh] : memref<4xf32>) {
      affine.store %f, %y[%vh] : memref<4xf32>
    }
  }
  return
}

// -----

// Another loop between them, not one of those fused.
func.func @loop_between(%x: memref<4xf32>, %y: memref<4xf32>, %z: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  tl.for %h = %c0 to %c4 step %c1 {
    tl.block "a" (%vh = spatial %h) reads() writes(%x[%vh] : memref<4xf32>) {
      affine.store %f, %x[%vh] : memref<4xf32>
    }
  }
  // expected-error @+1 {{fuseSiblings: an op with effects or regions lies between the loops}}
  tl.for %h = %c0 to %c4 step %c1 {
    tl.block "c" (%vh = spatial %h) reads() writes(%z[%vh] : memref<4xf32>) {
      affine.store %f, %z[%vh] : memref<4xf32>
    }
  }
  tl.for %h = %c0 to %c4 step %c1 {
    tl.block "b" (%vh = spatial %h) reads() writes(%y[%vh] : memref<4xf32>) {
      affine.store %f, %y[%vh] : memref<4xf32>
    }
  }
  return
}

// -----

// Bounds that differ.
func.func @bounds(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  tl.for %h = %c0 to %c4 step %c1 {
    tl.block "a" (%vh = spatial %h) reads() writes(%x[%vh] : memref<4xf32>) {
      affine.store %f, %x[%vh] : memref<4xf32>
    }
  }
  // expected-error @+1 {{fuseSiblings: the loop's bounds, step or kind differ from the first loop's}}
  tl.for %h = %c0 to %c3 step %c1 {
    tl.block "b" (%vh = spatial %h) reads() writes(%y[%vh] : memref<4xf32>) {
      affine.store %f, %y[%vh] : memref<4xf32>
    }
  }
  return
}
