// RUN: llm-opt %s -split-input-file -graph-output-rows -verify-diagnostics | FileCheck %s
// RUN: llm-opt %s -split-input-file -graph-output-rows -graph-output-rows -verify-diagnostics | FileCheck %s --check-prefix=TWICE

!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 4, element_type = f32>

// A decoder layer and its head. The attention mixes rows: it (and what feeds
// it) keeps every row; the residual, the MLP, the final norm and the head
// run on the last n_out rows, which the entry returns.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[CACHE:[^:]+]]: !graph.kv_cache<{{.*}}>, %[[N:.+]]: index {llmc.output_rows}) -> tensor<?x6xf32>
// CHECK: %[[X:.+]] = graph.embedding
// CHECK: %[[H:.+]] = graph.rms_norm %[[X]]
// CHECK: %[[A:.+]] = graph.attention %[[H]], %[[H]], %[[H]], %[[CACHE]]
// CHECK-DAG: %[[XS:.+]] = graph.last_rows %[[X]], %[[N]]
// CHECK-DAG: %[[AS:.+]] = graph.last_rows %[[A]], %[[N]]
// CHECK: %[[R:.+]] = graph.add %[[XS]], %[[AS]]
// CHECK: %[[H2:.+]] = graph.rms_norm %[[R]]
// CHECK: %[[G:.+]] = graph.matmul %[[H2]]
// CHECK: %[[S:.+]] = graph.silu %[[G]]
// CHECK: %[[U:.+]] = graph.matmul %[[H2]]
// CHECK: %[[M:.+]] = graph.mul %[[S]], %[[U]]
// CHECK: %[[D:.+]] = graph.matmul %[[M]]
// CHECK: %[[R2:.+]] = graph.add %[[R]], %[[D]]
// CHECK: %[[F:.+]] = graph.rms_norm %[[R2]]
// CHECK: %[[L:.+]] = graph.matmul %[[F]]
// CHECK-NOT: graph.last_rows
// CHECK: return %[[L]]
// TWICE-LABEL: func.func @forward
// TWICE-SAME: %{{.+}}: index {llmc.output_rows}) -> tensor<?x6xf32>
// TWICE-COUNT-2: graph.last_rows
// TWICE-NOT: graph.last_rows
// TWICE: return
func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x6xf32> {
  %emb = graph.param %w["emb"] : tensor<6x4xf32>
  %g = graph.param %w["g"] : tensor<4xf32>
  %w1 = graph.param %w["w1"] : tensor<8x4xf32>
  %w2 = graph.param %w["w2"] : tensor<4x8xf32>
  %w3 = graph.param %w["w3"] : tensor<8x4xf32>
  %x = graph.embedding %emb[%tokens] : tensor<6x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %h = graph.rms_norm %x, %g {eps = 1.0e-5 : f32} : tensor<?x4xf32>, tensor<4xf32>
  %a = graph.attention %h, %h, %h, %cache, %pos0 {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !cache
  %r = graph.add %x, %a : tensor<?x4xf32>, tensor<?x4xf32>
  %h2 = graph.rms_norm %r, %g {eps = 1.0e-5 : f32} : tensor<?x4xf32>, tensor<4xf32>
  %gate = graph.matmul %h2, %w1 : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
  %s = graph.silu %gate : tensor<?x8xf32>
  %up = graph.matmul %h2, %w3 : tensor<?x4xf32>, tensor<8x4xf32> -> tensor<?x8xf32>
  %m = graph.mul %s, %up : tensor<?x8xf32>, tensor<?x8xf32>
  %down = graph.matmul %m, %w2 : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
  %r2 = graph.add %r, %down : tensor<?x4xf32>, tensor<?x4xf32>
  %f = graph.rms_norm %r2, %g {eps = 1.0e-5 : f32} : tensor<?x4xf32>, tensor<4xf32>
  %logits = graph.matmul %f, %emb : tensor<?x4xf32>, tensor<6x4xf32> -> tensor<?x6xf32>
  return %logits : tensor<?x6xf32>
}

// -----

// A value another op reads in full is not sliced above it: %y feeds the
// result and a second consumer that keeps every row, so the slice stays
// below %y; the broadcast bias stays as it is.
// CHECK-LABEL: func.func @forward
// CHECK: %[[Y:.+]] = graph.add %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<4xf32>
// CHECK: %[[S:.+]] = graph.last_rows %[[Y]]
// CHECK: graph.silu %[[S]]
!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 4, element_type = f32>
func.func @forward(%x: tensor<?x4xf32>, %b: tensor<4xf32>, %cache: !cache, %pos0: index) -> tensor<?x4xf32> {
  %y = graph.add %x, %b : tensor<?x4xf32>, tensor<4xf32>
  %z = graph.attention %y, %y, %y, %cache, %pos0 {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !cache
  %u = graph.silu %y : tensor<?x4xf32>
  return %u : tensor<?x4xf32>
}

// -----

// Other functions are not entries.
// CHECK-LABEL: func.func @helper
// CHECK-SAME: (%{{[^,]+}}: tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NOT: graph.last_rows
func.func @helper(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = graph.silu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{graph-output-rows: the result of @forward must be a tensor with a dynamic leading (row) dimension}}
func.func @forward(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  return %x : tensor<4x4xf32>
}

// -----

// expected-error @+1 {{graph-output-rows: @forward must have one block and one result}}
func.func @forward(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  return %x, %x : tensor<?x4xf32>, tensor<?x4xf32>
}
