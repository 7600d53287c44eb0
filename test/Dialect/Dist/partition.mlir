// RUN: llm-opt %s -split-input-file -dist-propagate -dist-partition -verify-diagnostics | FileCheck %s

// Megatron's layer on two ranks, from annotations of Q, K, V, gate, up and
// the tied table: every value local, an all_reduce where a partial sum
// meets an op that needs it whole (the norms), the logits gathered.
!cache = !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 2, head_dim = 16, element_type = f32>
dist.mesh @mesh shape [2] axes ["tp"]
// CHECK-LABEL: func.func @layer
// The cache holds the rank's KV head.
// CHECK-SAME: !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 1, head_dim = 16, element_type = f32>
func.func @layer(%ids: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x32xf32> {
  // The rank's rows of the table, looked up from its first row's id.
  // CHECK: %[[EMB:.*]] = graph.param %{{.*}}["emb"] {dist.sharding = #dist.sharding<@mesh, {{\[\[}}"tp"], []]>} : tensor<16x64xf32>
  // CHECK: %[[POS:.*]] = dist.axis_index on @mesh axes ["tp"] : index
  // CHECK: %[[ROWS:.*]] = arith.constant 16 : index
  // CHECK: %[[OFF:.*]] = arith.muli %[[POS]], %[[ROWS]]
  // CHECK: %[[X0:.*]] = graph.embedding %[[EMB]][%{{.*}}] offset(%[[OFF]]) : tensor<16x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %emb0 = graph.param %w["emb"] : tensor<32x64xf32>
  %emb = dist.shard %emb0 to <@mesh, [["tp"], []]> : tensor<32x64xf32>
  %x0 = graph.embedding %emb[%ids] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: %[[S0:.*]] = dist.all_reduce %[[X0]] on @mesh axes ["tp"] : tensor<?x64xf32>
  // CHECK: graph.rms_norm %[[S0]]
  %g = graph.param %w["attn_norm"] : tensor<64xf32>
  %h = graph.rms_norm %x0, %g {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %wq0 = graph.param %w["wq"] : tensor<64x64xf32>
  %wk0 = graph.param %w["wk"] : tensor<32x64xf32>
  %wv0 = graph.param %w["wv"] : tensor<32x64xf32>
  %wq = dist.shard %wq0 to <@mesh, [["tp"], []]> : tensor<64x64xf32>
  %wk = dist.shard %wk0 to <@mesh, [["tp"], []]> : tensor<32x64xf32>
  %wv = dist.shard %wv0 to <@mesh, [["tp"], []]> : tensor<32x64xf32>
  // CHECK: graph.matmul %{{.*}} : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %q = graph.matmul %h, %wq : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %k = graph.matmul %h, %wk : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %v = graph.matmul %h, %wv : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  // CHECK: graph.rope {{.*}} : tensor<?x32xf32>
  %qr = graph.rope %q, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x64xf32>
  %kr = graph.rope %k, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x32xf32>
  // The rank's heads: 2 of 4, 1 KV head of 2.
  // CHECK: graph.attention {{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64{{.*}} : tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>
  %a = graph.attention %qr, %kr, %v, %cache, %pos0 {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !cache
  // O by its rows (inferred): a partial product, added to the partial
  // residual without a collective.
  // CHECK: %[[WO:.*]] = graph.param %{{.*}}["wo"] {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], ["tp"]]>} : tensor<64x32xf32>
  // CHECK: %[[O:.*]] = graph.matmul %{{.*}}, %[[WO]] : tensor<?x32xf32>, tensor<64x32xf32> -> tensor<?x64xf32>
  // CHECK: %[[R:.*]] = graph.add %[[X0]], %[[O]] : tensor<?x64xf32>, tensor<?x64xf32>
  %wo = graph.param %w["wo"] : tensor<64x64xf32>
  %o = graph.matmul %a, %wo : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %r = graph.add %x0, %o : tensor<?x64xf32>, tensor<?x64xf32>
  %g2 = graph.param %w["ffn_norm"] : tensor<64xf32>
  // CHECK: %[[S1:.*]] = dist.all_reduce %[[R]] on @mesh axes ["tp"]
  // CHECK: graph.rms_norm %[[S1]]
  %h2 = graph.rms_norm %r, %g2 {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %wg0 = graph.param %w["w_gate"] : tensor<128x64xf32>
  %wu0 = graph.param %w["w_up"] : tensor<128x64xf32>
  %wg = dist.shard %wg0 to <@mesh, [["tp"], []]> : tensor<128x64xf32>
  %wu = dist.shard %wu0 to <@mesh, [["tp"], []]> : tensor<128x64xf32>
  %gate = graph.matmul %h2, %wg : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %up = graph.matmul %h2, %wu : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  // CHECK: graph.silu {{.*}} : tensor<?x64xf32>
  // CHECK: graph.mul {{.*}} : tensor<?x64xf32>, tensor<?x64xf32>
  %s = graph.silu %gate : tensor<?x128xf32>
  %m = graph.mul %s, %up : tensor<?x128xf32>, tensor<?x128xf32>
  // CHECK: graph.param %{{.*}}["w_down"] {dist.sharding = #dist.sharding<@mesh, {{\[\[}}], ["tp"]]>} : tensor<64x64xf32>
  %wd = graph.param %w["w_down"] : tensor<64x128xf32>
  %d = graph.matmul %m, %wd : tensor<?x128xf32>, tensor<64x128xf32> -> tensor<?x64xf32>
  %x1 = graph.add %r, %d : tensor<?x64xf32>, tensor<?x64xf32>
  // The last row of the partial sum, then its sum: one row's all_reduce.
  // CHECK: %[[LAST:.*]] = graph.last_rows
  // CHECK: dist.all_reduce %[[LAST]]
  %n = arith.constant 1 : index
  %xl = graph.last_rows %x1, %n : tensor<?x64xf32>
  %gf = graph.param %w["norm"] : tensor<64xf32>
  %hf = graph.rms_norm %xl, %gf {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  // The head shares the table's slice; its logits split by vocabulary,
  // gathered for the caller.
  // CHECK: %[[L:.*]] = graph.matmul %{{.*}}, %[[EMB]] : tensor<?x64xf32>, tensor<16x64xf32> -> tensor<?x16xf32>
  // CHECK: %[[ALL:.*]] = dist.all_gather %[[L]] on @mesh axes ["tp"] gather_axis = 1 : tensor<?x16xf32> -> tensor<?x32xf32>
  // CHECK: return %[[ALL]]
  %head = dist.shard %emb0 to <@mesh, [["tp"], []]> : tensor<32x64xf32>
  %logits = graph.matmul %hf, %head : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  // CHECK-NOT: dist.shard
  return %logits : tensor<?x32xf32>
}

// -----

// A whole activation that an annotation wants split: a slice of a value
// every rank holds (not supported).
dist.mesh @mesh shape [2] axes ["tp"]
func.func @slice(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %s = graph.silu %x : tensor<?x64xf32>
  // expected-error @+1 {{dist-partition: operand dimension 1 must be split over tp, which would take a slice}}
  %t = dist.shard %s to <@mesh, [[], ["tp"]]> : tensor<?x64xf32>
  return %t : tensor<?x64xf32>
}

// -----

// One weight (two params of one name), two slicings.
dist.mesh @mesh shape [2] axes ["tp"]
func.func @twice(%x: tensor<?x64xf32>, %w: !graph.weights) -> tensor<?x64xf32> {
  %p = graph.param %w["w"] : tensor<64x64xf32>
  // expected-error @+1 {{dist-partition: parameter 'w' is sharded two ways}}
  %q = graph.param %w["w"] : tensor<64x64xf32>
  %a = dist.shard %p to <@mesh, [["tp"], []]> : tensor<64x64xf32>
  %b = dist.shard %q to <@mesh, [[], ["tp"]]> : tensor<64x64xf32>
  %y = graph.matmul %x, %a : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %z = graph.matmul %y, %b : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

// A bias takes its sum's columns; a quantized weight whose K would split
// its 32-wide blocks (80 columns a rank) stays whole, its input gathered.
dist.mesh @mesh shape [2] axes ["tp"]
// CHECK-LABEL: func.func @bias_and_blocks
func.func @bias_and_blocks(%x: tensor<?x64xf32>, %w: !graph.weights) -> tensor<?x64xf32> {
  %p = graph.param %w["up"] : tensor<160x64xf32>
  %up = dist.shard %p to <@mesh, [["tp"], []]> : tensor<160x64xf32>
  // CHECK: %[[B:.*]] = graph.param %{{.*}}["bias"] {dist.sharding = #dist.sharding<@mesh, {{\[\[}}"tp"]]>} : tensor<80xf32>
  // CHECK: graph.add %{{.*}}, %[[B]] : tensor<?x80xf32>, tensor<80xf32>
  %b = graph.param %w["bias"] : tensor<160xf32>
  %y = graph.matmul %x, %up : tensor<?x64xf32>, tensor<160x64xf32> -> tensor<?x160xf32>
  %z = graph.add %y, %b : tensor<?x160xf32>, tensor<160xf32>
  // CHECK: %[[D:.*]] = graph.param %{{.*}}["down"] : tensor<64x160x!graph.q8_0>
  // CHECK: %[[G:.*]] = dist.all_gather %{{.*}} on @mesh axes ["tp"] gather_axis = 1 : tensor<?x80xf32> -> tensor<?x160xf32>
  // CHECK: graph.matmul %[[G]], %[[D]]
  %d = graph.param %w["down"] : tensor<64x160x!graph.q8_0>
  %o = graph.matmul %z, %d : tensor<?x160xf32>, tensor<64x160x!graph.q8_0> -> tensor<?x64xf32>
  return %o : tensor<?x64xf32>
}
