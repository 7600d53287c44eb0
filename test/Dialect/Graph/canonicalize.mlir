// RUN: llm-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[X:.+]]: tensor<?x16xf32>)
// CHECK-NOT: graph.reshape
// CHECK: return %[[X]]
func.func @reshape_identity(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = graph.reshape %x : tensor<?x16xf32> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

// A round trip through another shape is the identity.
// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.+]]: tensor<?x16xf32>)
// CHECK-NOT: graph.reshape
// CHECK: return %[[X]]
func.func @reshape_round_trip(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = graph.reshape %x : tensor<?x16xf32> -> tensor<?x4x4xf32>
  %1 = graph.reshape %0 : tensor<?x4x4xf32> -> tensor<?x16xf32>
  return %1 : tensor<?x16xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_compose
// CHECK-SAME: (%[[X:.+]]: tensor<?x16xf32>)
// CHECK: %[[R:.+]] = graph.reshape %[[X]] : tensor<?x16xf32> -> tensor<?x2x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_compose(%x: tensor<?x16xf32>) -> tensor<?x2x8xf32> {
  %0 = graph.reshape %x : tensor<?x16xf32> -> tensor<?x4x4xf32>
  %1 = graph.reshape %0 : tensor<?x4x4xf32> -> tensor<?x2x8xf32>
  return %1 : tensor<?x2x8xf32>
}

// -----

// Params are pure: two reads of one weight are one after CSE, and unused
// ones disappear.
// CHECK-LABEL: func.func @param_dce
// CHECK-NOT: graph.param
func.func @param_dce(%w: !graph.weights) {
  %0 = graph.param %w["unused"] : tensor<4xf32>
  return
}
