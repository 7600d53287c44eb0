// RUN: llm-opt %s -split-input-file -dist-propagate | FileCheck %s

// A decoder layer with only Q, K, V, gate and up annotated (by their output
// columns, Megatron's column split): the whole layer follows. Q, K and V
// split by heads through RoPE and the attention; O's weight, reading heads
// split by tp, takes the row split (its K) and its product is a partial
// sum; the residual add of a replicated value and a partial one is neither
// (partitioning all-reduces the partial first); the MLP's gate and up split,
// their silu.mul too, down by rows and partial; the norms keep rows whole.
dist.mesh @tp shape [2] axes ["tp"]
!cache = !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 2, head_dim = 16, element_type = f32>
// CHECK-LABEL: func.func @layer
// CHECK: graph.rms_norm
// CHECK-NOT: dist.sharding
// CHECK-SAME: : tensor<?x64xf32>, tensor<64xf32>
// CHECK: %[[Q:.*]] = graph.matmul {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>{{.*}} -> tensor<?x64xf32>
// CHECK: %[[K:.*]] = graph.matmul {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>{{.*}} -> tensor<?x32xf32>
// CHECK: graph.rope %[[Q]]{{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>
// CHECK: graph.rope %[[K]]{{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>
// CHECK: graph.attention {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>
// CHECK: graph.param %{{.*}}["wo"] {dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>}
// CHECK: graph.matmul {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], []], partial = ["tp"]>
// CHECK: graph.add
// CHECK-NOT: dist.sharding
// CHECK-SAME: : tensor<?x64xf32>, tensor<?x64xf32>
// CHECK: graph.elementwise{{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>
// CHECK: graph.param %{{.*}}["w_down"] {dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>}
// CHECK: graph.matmul {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], []], partial = ["tp"]>
func.func @layer(%x: tensor<?x64xf32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x64xf32> {
  %g = graph.param %w["attn_norm"] : tensor<64xf32>
  %h = graph.rms_norm %x, %g {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %wq0 = graph.param %w["wq"] : tensor<64x64xf32>
  %wq = dist.shard %wq0 to <@tp, [["tp"], []]> : tensor<64x64xf32>
  %wk0 = graph.param %w["wk"] : tensor<32x64xf32>
  %wk = dist.shard %wk0 to <@tp, [["tp"], []]> : tensor<32x64xf32>
  %wv0 = graph.param %w["wv"] : tensor<32x64xf32>
  %wv = dist.shard %wv0 to <@tp, [["tp"], []]> : tensor<32x64xf32>
  %q = graph.matmul %h, %wq : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %k = graph.matmul %h, %wk : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %v = graph.matmul %h, %wv : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %qr = graph.rope %q, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x64xf32>
  %kr = graph.rope %k, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x32xf32>
  %a = graph.attention %qr, %kr, %v, %cache, %pos0 {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !cache
  %wo = graph.param %w["wo"] : tensor<64x64xf32>
  %o = graph.matmul %a, %wo : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %r = graph.add %x, %o : tensor<?x64xf32>, tensor<?x64xf32>
  %g2 = graph.param %w["ffn_norm"] : tensor<64xf32>
  %h2 = graph.rms_norm %r, %g2 {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %wg0 = graph.param %w["w_gate"] : tensor<128x64xf32>
  %wg = dist.shard %wg0 to <@tp, [["tp"], []]> : tensor<128x64xf32>
  %wu0 = graph.param %w["w_up"] : tensor<128x64xf32>
  %wu = dist.shard %wu0 to <@tp, [["tp"], []]> : tensor<128x64xf32>
  %gate = graph.matmul %h2, %wg : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %up = graph.matmul %h2, %wu : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %m = graph.elementwise (%gate, %up) : (tensor<?x128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32> {
  ^bb0(%ga: tensor<?x128xf32>, %u: tensor<?x128xf32>):
    %s = graph.silu %ga : tensor<?x128xf32>
    %p = graph.mul %s, %u : tensor<?x128xf32>, tensor<?x128xf32>
    graph.yield %p : tensor<?x128xf32>
  }
  %wd = graph.param %w["w_down"] : tensor<64x128xf32>
  %d = graph.matmul %m, %wd : tensor<?x128xf32>, tensor<64x128xf32> -> tensor<?x64xf32>
  %out = graph.add %r, %d : tensor<?x64xf32>, tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// Vocabulary-parallel embedding and head (the table split by rows): the
// lookup is a partial sum (each rank has the rows of its tokens, zeros
// elsewhere); the head's logits split by columns. Two partial sums over
// the same axes add to a partial sum.
dist.mesh @tp shape [2] axes ["tp"]
// CHECK-LABEL: func.func @vocab_parallel
// CHECK: graph.embedding {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], []], partial = ["tp"]>
// CHECK: graph.add {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], []], partial = ["tp"]>
// CHECK: graph.matmul {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], ["tp"]]>
func.func @vocab_parallel(%ids: tensor<?xi32>, %w: !graph.weights) -> tensor<?x32xf32> {
  %t0 = graph.param %w["emb"] : tensor<32x16xf32>
  %t = dist.shard %t0 to <@tp, [["tp"], []]> : tensor<32x16xf32>
  %x = graph.embedding %t[%ids] : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %y = graph.add %x, %x : tensor<?x16xf32>, tensor<?x16xf32>
  %l = graph.matmul %y, %t : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
  return %l : tensor<?x32xf32>
}

// -----

// What does not divide stays whole: 3 heads over 2 ranks (the attention
// and what follows replicated, the product that reads it not split), a
// split that would cut a RoPE head in two; an argument's sharding is a
// starting point too.
dist.mesh @tp shape [2] axes ["tp"]
!c3 = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 3, head_dim = 16, element_type = f32>
// CHECK-LABEL: func.func @uneven
// CHECK: graph.rope %arg0
// CHECK-NOT: dist.sharding
// CHECK-SAME: tensor<?x48xf32>
// CHECK: graph.attention
// CHECK-NOT: dist.sharding
// CHECK-SAME: : tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>
// CHECK: graph.rope %arg4
// CHECK-NOT: dist.sharding
// CHECK: return
func.func @uneven(%q: tensor<?x48xf32> {dist.sharding = #dist.sharding<@tp, [[], ["tp"]]>},
                  %k: tensor<?x48xf32>, %cache: !c3, %pos0: index,
                  %odd: tensor<?x32xf32> {dist.sharding = #dist.sharding<@tp, [[], ["tp"]]>}) -> tensor<?x32xf32> {
  %qr = graph.rope %q, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x48xf32>
  %a = graph.attention %q, %k, %k, %cache, %pos0 {layer = 0 : i64, num_heads = 3 : i64, num_kv_heads = 3 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, !c3
  %r = graph.rope %odd, %pos0 {head_dim = 32 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}


// -----

// Rows split over tp (sequence parallel) stay split through a product and
// an add, but not into RoPE (a row's angle is its position) nor attention
// (a row reads every earlier row's keys and values); a product of rows
// split over tp whose weight's K is split over tp too is a partial sum,
// its row split dropped (the axis names the sum).
dist.mesh @tp shape [2] axes ["tp"]
!c1 = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 2, head_dim = 16, element_type = f32>
// CHECK-LABEL: func.func @rows
// CHECK: %[[Y:.*]] = graph.matmul {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}"tp"], []]>
// CHECK: graph.rope %[[Y]]
// CHECK-NOT: dist.sharding
// CHECK-SAME: : tensor<?x32xf32>
// CHECK: graph.attention
// CHECK-NOT: dist.sharding
// CHECK-SAME: : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>
// CHECK: graph.matmul {{.*}}dist.sharding = #dist.sharding<@tp, {{\[\[}}], []], partial = ["tp"]>
func.func @rows(%x: tensor<?x32xf32> {dist.sharding = #dist.sharding<@tp, [["tp"], []]>},
                %w: tensor<32x32xf32>, %wk: tensor<32x32xf32> {dist.sharding = #dist.sharding<@tp, [[], ["tp"]]>},
                %cache: !c1, %pos0: index) -> tensor<?x32xf32> {
  %y = graph.matmul %x, %w : tensor<?x32xf32>, tensor<32x32xf32> -> tensor<?x32xf32>
  %r = graph.rope %y, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x32xf32>
  %a = graph.attention %y, %y, %y, %cache, %pos0 {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !c1
  %p = graph.matmul %x, %wk : tensor<?x32xf32>, tensor<32x32xf32> -> tensor<?x32xf32>
  return %p : tensor<?x32xf32>
}
