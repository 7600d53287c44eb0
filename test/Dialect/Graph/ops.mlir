// RUN: llm-opt %s | llm-opt | FileCheck %s
// Round trip of every graph op and type.

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>

// CHECK-LABEL: func.func @decoder_ops
// CHECK-SAME: !graph.weights, %{{.*}}: !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @decoder_ops(%ids: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x10xf32> {
  // CHECK: graph.param %{{.*}}["emb"] {source = #graph.extern<file = "m.bin", offset = 28, dtype = bf16>} : tensor<10x16xf32>
  %emb = graph.param %w["emb"] {source = #graph.extern<file = "m.bin", offset = 28, dtype = bf16>} : tensor<10x16xf32>
  // CHECK: graph.embedding %{{.*}}[%{{.*}}] : tensor<10x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %x = graph.embedding %emb[%ids] : tensor<10x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %g = graph.param %w["g"] : tensor<16xf32>
  // CHECK: graph.rms_norm %{{.*}}, %{{.*}} {eps = 9.99999974E-6 : f32} : tensor<?x16xf32>, tensor<16xf32>
  %h = graph.rms_norm %x, %g {eps = 1.0e-5 : f32} : tensor<?x16xf32>, tensor<16xf32>
  %wq = graph.param %w["wq"] : tensor<16x16xf32>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<16x16xf32> -> tensor<?x16xf32>
  %q = graph.matmul %h, %wq : tensor<?x16xf32>, tensor<16x16xf32> -> tensor<?x16xf32>
  %wk = graph.param %w["wk"] : tensor<8x16xf32>
  %k = graph.matmul %h, %wk : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
  %bk = graph.param %w["bk"] : tensor<8xf32>
  // CHECK: graph.add %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<8xf32>
  %kb = graph.add %k, %bk : tensor<?x8xf32>, tensor<8xf32>
  // CHECK: graph.rope %{{.*}}, %{{.*}} {head_dim = 4 : i64, style = #graph.rope_style<half>, theta = 1.000000e+06 : f64} : tensor<?x16xf32>
  %qr = graph.rope %q, %pos0 {head_dim = 4 : i64, theta = 1.0e6 : f64, style = #graph.rope_style<half>} : tensor<?x16xf32>
  // CHECK: #graph.rope_style<interleaved>
  %kr = graph.rope %kb, %pos0 {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<interleaved>} : tensor<?x8xf32>
  // CHECK: graph.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 4 : i64, layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f32}
  %a = graph.attention %qr, %kr, %kb, %cache, %pos0 {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  // CHECK: graph.reshape %{{.*}} : tensor<?x16xf32> -> tensor<?x4x4xf32>
  %r = graph.reshape %a : tensor<?x16xf32> -> tensor<?x4x4xf32>
  %r2 = graph.reshape %r : tensor<?x4x4xf32> -> tensor<?x16xf32>
  // CHECK: graph.silu %{{.*}} : tensor<?x16xf32>
  %s = graph.silu %r2 : tensor<?x16xf32>
  // CHECK: graph.mul %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?x16xf32>
  %m = graph.mul %s, %x : tensor<?x16xf32>, tensor<?x16xf32>
  %logits = graph.matmul %m, %emb : tensor<?x16xf32>, tensor<10x16xf32> -> tensor<?x10xf32>
  return %logits : tensor<?x10xf32>
}

// CHECK-LABEL: func.func @last_rows
// CHECK: graph.last_rows %{{.*}}, %{{.*}} : tensor<?x8xf32>
func.func @last_rows(%x: tensor<?x8xf32>, %n: index) -> tensor<?x8xf32> {
  %0 = graph.last_rows %x, %n : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
