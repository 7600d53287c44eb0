// RUN: llm-opt %s -split-input-file -tl-cse-nests | FileCheck %s
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -cse -tl-cse-nests | FileCheck %s --check-prefix=GRAPH

// A nest that computes a fresh buffer as an earlier one did, from the same
// input unchanged in between, goes; its users read the earlier buffer.
// CHECK-LABEL: func.func @merged
// CHECK-SAME: (%[[X:.+]]: memref<8xf32>, %[[OUT:.+]]: memref<8xf32>)
// CHECK: %[[A:.+]] = memref.alloc() : memref<8xf32>
// CHECK: tl.block "double"
// CHECK-NOT: memref.alloc
// CHECK-NOT: tl.block "double_again"
// CHECK: tl.block "sum" ({{.*}}) reads(%[[A]][%{{.+}}] : memref<8xf32>, %[[A]][%{{.+}}] : memref<8xf32>) writes(%[[OUT]]
func.func @merged(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "double" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%a[%v] : memref<8xf32>) {
      %e = affine.load %x[%v] : memref<8xf32>
      %d = arith.addf %e, %e : f32
      affine.store %d, %a[%v] : memref<8xf32>
    }
  }
  %b = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "double_again" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) {
      %e = affine.load %x[%v] : memref<8xf32>
      %d = arith.addf %e, %e : f32
      affine.store %d, %b[%v] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "sum" (%v = spatial %i) reads(%a[%v] : memref<8xf32>, %b[%v] : memref<8xf32>) writes(%out[%v] : memref<8xf32>) {
      %p = affine.load %a[%v] : memref<8xf32>
      %q = affine.load %b[%v] : memref<8xf32>
      %s = arith.addf %p, %q : f32
      affine.store %s, %out[%v] : memref<8xf32>
    }
  }
  return
}

// -----

// The input changes in between (a nest writes a view of it): both stay.
// CHECK-LABEL: func.func @input_changed
// CHECK: tl.block "double"
// CHECK: tl.block "bump"
// CHECK: tl.block "double_again"
func.func @input_changed(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "double" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%a[%v] : memref<8xf32>) {
      %e = affine.load %x[%v] : memref<8xf32>
      %d = arith.addf %e, %e : f32
      affine.store %d, %a[%v] : memref<8xf32>
    }
  }
  %half = memref.subview %x[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "bump" (%v = spatial %i) reads() writes(%half[%v] : memref<4xf32, strided<[1], offset: 4>>) {
      %one = arith.constant 1.0 : f32
      affine.store %one, %half[%v] : memref<4xf32, strided<[1], offset: 4>>
    }
  }
  %b = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "double_again" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) {
      %e = affine.load %x[%v] : memref<8xf32>
      %d = arith.addf %e, %e : f32
      affine.store %d, %b[%v] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "sum" (%v = spatial %i) reads(%a[%v] : memref<8xf32>, %b[%v] : memref<8xf32>) writes(%out[%v] : memref<8xf32>) {
      %p = affine.load %a[%v] : memref<8xf32>
      %q = affine.load %b[%v] : memref<8xf32>
      %s = arith.addf %p, %q : f32
      affine.store %s, %out[%v] : memref<8xf32>
    }
  }
  return
}

// -----

// The second buffer is written again later (not the nest's alone): both
// stay.
// CHECK-LABEL: func.func @written_later
// CHECK: tl.block "double"
// CHECK: tl.block "double_again"
func.func @written_later(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %a = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "double" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%a[%v] : memref<8xf32>) {
      %e = affine.load %x[%v] : memref<8xf32>
      %d = arith.addf %e, %e : f32
      affine.store %d, %a[%v] : memref<8xf32>
    }
  }
  %b = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "double_again" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) {
      %e = affine.load %x[%v] : memref<8xf32>
      %d = arith.addf %e, %e : f32
      affine.store %d, %b[%v] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "in_place" (%v = spatial %i) reads(%b[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) {
      %q = affine.load %b[%v] : memref<8xf32>
      %s = arith.addf %q, %q : f32
      affine.store %s, %b[%v] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "sum" (%v = spatial %i) reads(%a[%v] : memref<8xf32>, %b[%v] : memref<8xf32>) writes(%out[%v] : memref<8xf32>) {
      %p = affine.load %a[%v] : memref<8xf32>
      %q = affine.load %b[%v] : memref<8xf32>
      %s = arith.addf %p, %q : f32
      affine.store %s, %out[%v] : memref<8xf32>
    }
  }
  return
}

// -----

// llama.cpp mode: two matmuls of one input quantize it alike (the block
// maxima, scales and bytes); the second matmul reads the first's.
// GRAPH-LABEL: func.func @shared_input
// GRAPH-COUNT-1: tl.block "act_absmax"
// GRAPH-NOT: tl.block "act_absmax
// GRAPH-COUNT-1: tl.block "act_quant"
// GRAPH-NOT: tl.block "act_
// GRAPH: tl.block "matmul_idot"
// GRAPH: tl.block "matmul_idot_1"
func.func @shared_input(%x: tensor<?x256xf32>, %w: !graph.weights) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %a = graph.param %w["a"] {blob_offset = 0 : i64} : tensor<32x256x!graph.q8_0>
  %b = graph.param %w["b"] {blob_offset = 8704 : i64} : tensor<32x256x!graph.q8_0>
  %0 = graph.matmul %x, %a {act_type = !graph.q8_0} : tensor<?x256xf32>, tensor<32x256x!graph.q8_0> -> tensor<?x32xf32>
  %1 = graph.matmul %x, %b {act_type = !graph.q8_0} : tensor<?x256xf32>, tensor<32x256x!graph.q8_0> -> tensor<?x32xf32>
  return %0, %1 : tensor<?x32xf32>, tensor<?x32xf32>
}
