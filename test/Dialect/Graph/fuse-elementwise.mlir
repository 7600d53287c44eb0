// RUN: llm-opt %s -graph-fuse-elementwise -split-input-file | FileCheck %s

// The MLP's silu(gate) * up becomes one graph.elementwise: the silu's result
// is used once, by the mul, and has its type.
// CHECK-LABEL: func.func @swiglu
// CHECK-SAME: (%[[G:.+]]: tensor<?x8xf32>, %[[U:.+]]: tensor<?x8xf32>)
// CHECK-NEXT: %[[F:.+]] = graph.elementwise(%[[G]], %[[U]]) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32> {
// CHECK-NEXT: ^bb0(%[[BG:.+]]: tensor<?x8xf32>, %[[BU:.+]]: tensor<?x8xf32>):
// CHECK-NEXT:   %[[S:.+]] = graph.silu %[[BG]]
// CHECK-NEXT:   %[[M:.+]] = graph.mul %[[S]], %[[BU]]
// CHECK-NEXT:   graph.yield %[[M]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @swiglu(%g: tensor<?x8xf32>, %u: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %s = graph.silu %g : tensor<?x8xf32>
  %m = graph.mul %s, %u : tensor<?x8xf32>, tensor<?x8xf32>
  return %m : tensor<?x8xf32>
}

// -----

// A tree of three ops with a broadcast input (a bias row) and an input two
// of them read: one op, each input once.
// CHECK-LABEL: func.func @tree
// CHECK: graph.elementwise(%arg0, %arg1) : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
// CHECK: graph.add
// CHECK: graph.silu
// CHECK: graph.mul
// CHECK: graph.yield
// CHECK-NOT: graph.add
func.func @tree(%x: tensor<?x8xf32>, %bias: tensor<8xf32>) -> tensor<?x8xf32> {
  %a = graph.add %x, %bias : tensor<?x8xf32>, tensor<8xf32>
  %s = graph.silu %x : tensor<?x8xf32>
  %m = graph.mul %a, %s : tensor<?x8xf32>, tensor<?x8xf32>
  return %m : tensor<?x8xf32>
}

// -----

// A result used twice (here by the return as well) is computed once into a
// tensor: no fusion, nothing recomputed.
// CHECK-LABEL: func.func @shared
// CHECK-NOT: graph.elementwise
// CHECK: graph.silu
// CHECK: graph.mul
func.func @shared(%g: tensor<?x8xf32>, %u: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s = graph.silu %g : tensor<?x8xf32>
  %m = graph.mul %s, %u : tensor<?x8xf32>, tensor<?x8xf32>
  return %s, %m : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Non-elementwise producers (a matmul, a norm) are inputs, not fused.
// CHECK-LABEL: func.func @boundaries
// CHECK: graph.rms_norm
// CHECK: graph.elementwise
// CHECK-NOT: graph.rms_norm
// CHECK: graph.yield
func.func @boundaries(%x: tensor<?x8xf32>, %w: tensor<8xf32>, %r: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %n = graph.rms_norm %x, %w {eps = 1.0e-5 : f32} : tensor<?x8xf32>, tensor<8xf32>
  %s = graph.silu %n : tensor<?x8xf32>
  %a = graph.add %r, %s : tensor<?x8xf32>, tensor<?x8xf32>
  return %a : tensor<?x8xf32>
}
