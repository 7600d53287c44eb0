// RUN: llm-opt %s -pass-pipeline='builtin.module(func.func(tl-release-buffers))' -split-input-file | FileCheck %s

// Each buffer is freed right after the last top-level op that uses it,
// through views and nested loops.
// CHECK-LABEL: func.func @chain
func.func @chain(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // CHECK: %[[A:.+]] = memref.alloc
  %a = memref.alloc(%n) : memref<?xf32>
  // CHECK: %[[B:.+]] = memref.alloc
  %b = memref.alloc(%n) : memref<?xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.block "copy" (%v = spatial %i) reads(%a[%v] : memref<?xf32>) writes(%b[%v] : memref<?xf32>) {
      %x = affine.load %a[%v] : memref<?xf32>
      affine.store %x, %b[%v] : memref<?xf32>
    }
  }
  // CHECK: memref.dealloc %[[A]]
  // CHECK-NEXT: %[[V:.+]] = memref.expand_shape %[[B]]
  %view = memref.expand_shape %b [[0, 1]] output_shape [%n, 1] : memref<?xf32> into memref<?x1xf32>
  // CHECK-NEXT: tl.for
  tl.for %i = %c0 to %n step %c1 {
    tl.block "out" (%v = spatial %i) reads(%view[%v, 0] : memref<?x1xf32>) writes(%out[%v] : memref<?xf32>) {
      %x = affine.load %view[%v, 0] : memref<?x1xf32>
      affine.store %x, %out[%v] : memref<?xf32>
    }
  }
  // CHECK: memref.dealloc %[[B]]
  // CHECK-NEXT: return
  return
}

// -----

// Returned buffers and buffers already freed are left alone.
// CHECK-LABEL: func.func @escapes
// CHECK-COUNT-1: memref.dealloc
// CHECK-NOT: memref.dealloc
func.func @escapes(%n: index) -> memref<?xf32> {
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %b : memref<?xf32>
  return %a : memref<?xf32>
}
