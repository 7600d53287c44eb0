// RUN: llm-opt %s -dist-plan="mesh=2 latency=1.0" -dist-stage="stage=0" | FileCheck %s --check-prefix=S0
// RUN: llm-opt %s -dist-plan="mesh=2 latency=1.0" -dist-stage="stage=1" | FileCheck %s --check-prefix=S1
// RUN: llm-opt %s -dist-plan="mesh=2 latency=1.0" -dist-stage="stage=1" -dist-propagate -dist-partition -graph-layout-weights -convert-graph-to-tl | FileCheck %s --check-prefix=TL
// RUN: not llm-opt %s -dist-plan="mesh=2 latency=1.0" -dist-stage="stage=2" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: llm-opt %s -dist-plan="mesh=2 memory-bandwidth=1e6" -dist-stage="stage=1" | FileCheck %s --check-prefix=TP

// A two-layer model on a slow link: two pipeline stages of a layer each.
//
// Stage 0: the embedding and layer 0; its rows to stage 1; the logits from
// stage 1, which it returns. No head, no layer 1; a cache of one layer.
// S0: dist.mesh @mesh shape [2] axes ["pp"]
// S0-LABEL: func.func @forward
// S0-SAME: !graph.kv_cache<layers = 1,
// S0: %[[N:.*]] = tensor.dim %{{.*}}, %c0
// S0: graph.embedding
// S0: graph.attention {{.*}}layer = 0 : i64
// S0-NOT: graph.attention
// S0: dist.send %{{.*}} on @mesh axes ["pp"] to [1] : tensor<?x64xf32>
// S0: %[[L:.*]] = dist.recv on @mesh axes ["pp"] from [1] sizes(%[[N]]) : tensor<?x32xf32>
// S0-NEXT: return %[[L]]
//
// Stage 1: layer 1 (now layer 0 of its cache) from stage 0's rows, the
// final norm and the head; the logits to stage 0, and returned.
// S1-LABEL: func.func @forward
// S1-SAME: !graph.kv_cache<layers = 1,
// S1-NOT: graph.embedding
// S1: %[[X:.*]] = dist.recv on @mesh axes ["pp"] from [0] sizes(%{{.*}}) : tensor<?x64xf32>
// S1: graph.rms_norm %[[X]]
// S1: graph.attention {{.*}}layer = 0 : i64
// S1-NOT: graph.attention
// S1: %[[L:.*]] = graph.matmul {{.*}} -> tensor<?x32xf32>
// S1-NEXT: dist.send %[[L]] on @mesh axes ["pp"] to [0] : tensor<?x32xf32>
// S1-NEXT: return %[[L]]
//
// Its buffers: the rows received into one, the logits sent from another.
// TL: dist.buffer_recv %{{.*}} on @mesh axes ["pp"] from [0] : memref<?x64xf32>
// TL: dist.buffer_send %{{.*}} on @mesh axes ["pp"] to [0] : memref<?x32xf32>
//
// BAD: error: dist-stage: stage 2 of a plan of 2 stages
//
// A tensor-parallel plan has no stages: nothing is cut.
// TP-COUNT-2: graph.attention
!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 16, element_type = f32>
func.func @forward(%ids: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x32xf32> {
  %emb = graph.param %w["emb"] : tensor<32x64xf32>
  %x0 = graph.embedding %emb[%ids] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %g_0 = graph.param %w["l.0.attn_norm"] : tensor<64xf32>
  %h_0 = graph.rms_norm %x0, %g_0 {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %wq_0 = graph.param %w["l.0.wq"] : tensor<64x64xf32>
  %wk_0 = graph.param %w["l.0.wk"] : tensor<32x64xf32>
  %wv_0 = graph.param %w["l.0.wv"] : tensor<32x64xf32>
  %q_0 = graph.matmul %h_0, %wq_0 : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %k_0 = graph.matmul %h_0, %wk_0 : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %v_0 = graph.matmul %h_0, %wv_0 : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %qr_0 = graph.rope %q_0, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x64xf32>
  %kr_0 = graph.rope %k_0, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x32xf32>
  %a_0 = graph.attention %qr_0, %kr_0, %v_0, %cache, %pos0 {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !cache
  %wo_0 = graph.param %w["l.0.wo"] : tensor<64x64xf32>
  %o_0 = graph.matmul %a_0, %wo_0 : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %r_0 = graph.add %x0, %o_0 : tensor<?x64xf32>, tensor<?x64xf32>
  %g2_0 = graph.param %w["l.0.ffn_norm"] : tensor<64xf32>
  %h2_0 = graph.rms_norm %r_0, %g2_0 {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %wg_0 = graph.param %w["l.0.w_gate"] : tensor<128x64xf32>
  %wu_0 = graph.param %w["l.0.w_up"] : tensor<128x64xf32>
  %gate_0 = graph.matmul %h2_0, %wg_0 : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %up_0 = graph.matmul %h2_0, %wu_0 : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %m_0 = graph.elementwise (%gate_0, %up_0) : (tensor<?x128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32> {
  ^bb0(%ga: tensor<?x128xf32>, %u: tensor<?x128xf32>):
    %s = graph.silu %ga : tensor<?x128xf32>
    %p = graph.mul %s, %u : tensor<?x128xf32>, tensor<?x128xf32>
    graph.yield %p : tensor<?x128xf32>
  }
  %wd_0 = graph.param %w["l.0.w_down"] : tensor<64x128xf32>
  %d_0 = graph.matmul %m_0, %wd_0 : tensor<?x128xf32>, tensor<64x128xf32> -> tensor<?x64xf32>
  %x1 = graph.add %r_0, %d_0 : tensor<?x64xf32>, tensor<?x64xf32>
  %g_1 = graph.param %w["l.1.attn_norm"] : tensor<64xf32>
  %h_1 = graph.rms_norm %x1, %g_1 {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %wq_1 = graph.param %w["l.1.wq"] : tensor<64x64xf32>
  %wk_1 = graph.param %w["l.1.wk"] : tensor<32x64xf32>
  %wv_1 = graph.param %w["l.1.wv"] : tensor<32x64xf32>
  %q_1 = graph.matmul %h_1, %wq_1 : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %k_1 = graph.matmul %h_1, %wk_1 : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %v_1 = graph.matmul %h_1, %wv_1 : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %qr_1 = graph.rope %q_1, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x64xf32>
  %kr_1 = graph.rope %k_1, %pos0 {head_dim = 16 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x32xf32>
  %a_1 = graph.attention %qr_1, %kr_1, %v_1, %cache, %pos0 {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !cache
  %wo_1 = graph.param %w["l.1.wo"] : tensor<64x64xf32>
  %o_1 = graph.matmul %a_1, %wo_1 : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  %r_1 = graph.add %x1, %o_1 : tensor<?x64xf32>, tensor<?x64xf32>
  %g2_1 = graph.param %w["l.1.ffn_norm"] : tensor<64xf32>
  %h2_1 = graph.rms_norm %r_1, %g2_1 {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %wg_1 = graph.param %w["l.1.w_gate"] : tensor<128x64xf32>
  %wu_1 = graph.param %w["l.1.w_up"] : tensor<128x64xf32>
  %gate_1 = graph.matmul %h2_1, %wg_1 : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %up_1 = graph.matmul %h2_1, %wu_1 : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %m_1 = graph.elementwise (%gate_1, %up_1) : (tensor<?x128xf32>, tensor<?x128xf32>) -> tensor<?x128xf32> {
  ^bb0(%ga: tensor<?x128xf32>, %u: tensor<?x128xf32>):
    %s = graph.silu %ga : tensor<?x128xf32>
    %p = graph.mul %s, %u : tensor<?x128xf32>, tensor<?x128xf32>
    graph.yield %p : tensor<?x128xf32>
  }
  %wd_1 = graph.param %w["l.1.w_down"] : tensor<64x128xf32>
  %d_1 = graph.matmul %m_1, %wd_1 : tensor<?x128xf32>, tensor<64x128xf32> -> tensor<?x64xf32>
  %x2 = graph.add %r_1, %d_1 : tensor<?x64xf32>, tensor<?x64xf32>
  %gf = graph.param %w["norm"] : tensor<64xf32>
  %hf = graph.rms_norm %x2, %gf {eps = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %logits = graph.matmul %hf, %emb : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  return %logits : tensor<?x32xf32>
}
