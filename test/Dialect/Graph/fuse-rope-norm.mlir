// RUN: llm-opt %s -graph-fuse-rope-norm -split-input-file | FileCheck %s

// Qwen3's k norm: the rows split into heads, each head RMS-normalised, the
// rows joined again and rotated. The norm, both reshapes and the
// normalised tensor go: one rope normalises each head as it loads it.
// CHECK-LABEL: func.func @qk_norm
// CHECK-SAME: (%[[K:.+]]: tensor<?x8xf32>, %[[P:.+]]: index, %[[G:.+]]: tensor<4xf32>)
// CHECK-NEXT: %[[R:.+]] = graph.rope %[[K]], %[[P]] norm(%[[G]] : tensor<4xf32>) {head_dim = 4 : i64, norm_eps = 9.99999997E-7 : f32, style = #graph.rope_style<half>, theta = 1.000000e+06 : f64} : tensor<?x8xf32>
// CHECK-NEXT: return %[[R]]
func.func @qk_norm(%k: tensor<?x8xf32>, %p: index, %g: tensor<4xf32>) -> tensor<?x8xf32> {
  %0 = graph.reshape %k : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %1 = graph.rms_norm %0, %g {eps = 1.0e-6 : f32} : tensor<?x2x4xf32>, tensor<4xf32>
  %2 = graph.reshape %1 : tensor<?x2x4xf32> -> tensor<?x8xf32>
  %3 = graph.rope %2, %p {head_dim = 4 : i64, theta = 1.0e6 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return %3 : tensor<?x8xf32>
}

// -----

// The split rows stay where something else reads them; the norm still
// fuses (the rows it read are the rope's input now).
// CHECK-LABEL: func.func @split_used
// CHECK: %[[S:.+]] = graph.reshape %arg0
// CHECK-NOT: graph.rms_norm
// CHECK: graph.rope %arg0, %arg1 norm(%arg2 : tensor<4xf32>)
// CHECK: return %{{.+}}, %[[S]]
func.func @split_used(%k: tensor<?x8xf32>, %p: index, %g: tensor<4xf32>) -> (tensor<?x8xf32>, tensor<?x2x4xf32>) {
  %0 = graph.reshape %k : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %1 = graph.rms_norm %0, %g {eps = 1.0e-6 : f32} : tensor<?x2x4xf32>, tensor<4xf32>
  %2 = graph.reshape %1 : tensor<?x2x4xf32> -> tensor<?x8xf32>
  %3 = graph.rope %2, %p {head_dim = 4 : i64, theta = 1.0e6 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return %3, %0 : tensor<?x8xf32>, tensor<?x2x4xf32>
}

// -----

// Left alone: the normalised heads are read by something else too
// (@norm_used), the norm is not over one head of the rope (@other_width:
// heads of 8, rope heads of 4), and a norm over whole rows (@row_norm: no
// reshape around it, a norm of the row before the projections).
// CHECK-LABEL: func.func @norm_used
// CHECK: graph.rms_norm
// CHECK: graph.rope %{{.+}}, %{{.+}} {
// CHECK-LABEL: func.func @other_width
// CHECK: graph.rms_norm
// CHECK: graph.rope %{{.+}}, %{{.+}} {
// CHECK-LABEL: func.func @row_norm
// CHECK: graph.rms_norm
// CHECK: graph.rope %{{.+}}, %{{.+}} {
func.func @norm_used(%k: tensor<?x8xf32>, %p: index, %g: tensor<4xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %0 = graph.reshape %k : tensor<?x8xf32> -> tensor<?x2x4xf32>
  %1 = graph.rms_norm %0, %g {eps = 1.0e-6 : f32} : tensor<?x2x4xf32>, tensor<4xf32>
  %2 = graph.reshape %1 : tensor<?x2x4xf32> -> tensor<?x8xf32>
  %3 = graph.rope %2, %p {head_dim = 4 : i64, theta = 1.0e6 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return %3, %2 : tensor<?x8xf32>, tensor<?x8xf32>
}
func.func @other_width(%k: tensor<?x8xf32>, %p: index, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = graph.reshape %k : tensor<?x8xf32> -> tensor<?x1x8xf32>
  %1 = graph.rms_norm %0, %g {eps = 1.0e-6 : f32} : tensor<?x1x8xf32>, tensor<8xf32>
  %2 = graph.reshape %1 : tensor<?x1x8xf32> -> tensor<?x8xf32>
  %3 = graph.rope %2, %p {head_dim = 4 : i64, theta = 1.0e6 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return %3 : tensor<?x8xf32>
}
func.func @row_norm(%k: tensor<?x8xf32>, %p: index, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  %1 = graph.rms_norm %k, %g {eps = 1.0e-6 : f32} : tensor<?x8xf32>, tensor<8xf32>
  %3 = graph.rope %1, %p {head_dim = 4 : i64, theta = 1.0e6 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return %3 : tensor<?x8xf32>
}
