// RUN: llm-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @empty_loop
// CHECK-NOT: tl.for
func.func @empty_loop(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tl.for %i = %c1 to %c0 step %c1 {
    tl.block "b" (%v = spatial %i) reads() writes(%y[%v] : memref<8xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%v] : memref<8xf32>
    }
  }
  return
}

// -----

// A single-iteration loop is inlined with its variable bound to the lower
// bound.
// CHECK-LABEL: func.func @single_iteration
// CHECK: %[[C3:.+]] = arith.constant 3 : index
// CHECK-NOT: tl.for
// CHECK: tl.block "b" (%{{.*}} = spatial %[[C3]])
func.func @single_iteration(%y: memref<8xf32>) {
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  tl.for %i = %c3 to %c4 step %c1 {
    tl.block "b" (%v = spatial %i) reads() writes(%y[%v] : memref<8xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%v] : memref<8xf32>
    }
  }
  return
}

// -----

// Loops with more than one iteration, or unknown bounds, stay.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-2: tl.for
func.func @kept(%y: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  tl.for %i = %c0 to %c2 step %c1 {
    tl.for %j = %c0 to %n step %c1 {
      tl.block "b" (%v = spatial %j) reads() writes(%y[%v] : memref<8xf32>) {
        %z = arith.constant 1.0 : f32
        affine.store %z, %y[%v] : memref<8xf32>
      }
    }
  }
  return
}
