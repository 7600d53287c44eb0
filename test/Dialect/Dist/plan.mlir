// RUN: llm-opt %s -dist-plan="mesh=2 memory-bandwidth=1e6 print=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=TP2
// RUN: llm-opt %s -dist-plan="mesh=2 memory-bandwidth=1e6" | FileCheck %s --check-prefix=TP2IR
// RUN: llm-opt %s -dist-plan="mesh=2 memory-bandwidth=1e6 latency=1.0 print=1" 2>&1 | FileCheck %s --check-prefix=SLOW
// RUN: llm-opt %s -dist-plan="mesh=2x2 memory-bandwidth=1e6 latency=1.0,1e-6 print=1" 2>&1 | FileCheck %s --check-prefix=GRID
// RUN: llm-opt %s -dist-plan="mesh=2 memory=157000 print=1" 2>&1 | FileCheck %s --check-prefix=MEM
// RUN: llm-opt %s -dist-plan="mesh=2 memory-bandwidth=1e6" -dist-propagate | FileCheck %s --check-prefix=CHAIN
// RUN: not llm-opt %s -dist-plan="mesh=4" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not llm-opt %s -dist-plan="mesh=2x0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not llm-opt %s -dist-plan="mesh=2 bandwidth=0" 2>&1 | FileCheck %s --check-prefix=BADLINK
// RUN: llm-opt %s -dist-plan="mesh=2 memory-bandwidth=1e9 flops=1e9 latency=1e-5 print=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=MICRO
// RUN: llm-opt %s -dist-plan="mesh=2 roles=pp micro-batch=64" | FileCheck %s --check-prefix=GIVEN
// RUN: llm-opt %s -dist-plan="mesh=2 roles=pp micro-batch=1024 print=1" -o /dev/null 2>&1 | FileCheck %s --check-prefix=LARGE
// RUN: not llm-opt %s -dist-plan="mesh=2 flops=0" 2>&1 | FileCheck %s --check-prefix=BADRATE
// RUN: not llm-opt %s -dist-plan="mesh=2 micro-batch=-2" 2>&1 | FileCheck %s --check-prefix=BADMICRO
// RUN: not llm-opt %s -dist-plan="mesh=2 roles=tp micro-batch=8" 2>&1 | FileCheck %s --check-prefix=NOPIPE

// The plan's choice on a 2-layer model (hidden 64, 4 heads, 2 KV heads,
// FFN 128, a tied vocabulary of 32: 288 KiB of layer weights in f32), in
// cases with a known best answer.
//
// Weights read at 1 MB/s (compute dominates) over a fast link: tensor
// parallel halves the time a token (2 x 2 all-reduces a token, 5 us each,
// are nothing beside it).
// TP2: dist-plan: @forward, 2 layers, 4 heads, 2 KV heads, hidden 64, FFN 128, vocabulary 32; mesh 2
// TP2-NEXT: pp=2: 3.031e-01 s a token (compute 3.031e-01, communication 1.003e-05), 159744 bytes a rank; 2.965e-01 s a 512-token prompt
// TP2-NEXT: tp=2: 1.516e-01 s a token (compute 1.516e-01, communication 5.513e-05), 155648 bytes a rank; 1.483e-01 s a 512-token prompt
// TP2-NEXT: chosen: tp=2
// The plan as annotations: the mesh with its link, Q, K, V, gate and up of
// both layers by output columns, the tied table once for the lookup and
// once for the head (by vocabulary rows), and the module's dist.plan.
// TP2IR: module attributes {dist.plan = {bytes_per_rank = 155648 : i64, micro_batch = 0 : i64, pp = [], prompt_seconds = {{.*}} : f64, seconds_per_token = {{.*}} : f64, stages = array<i64: 0>, tp = ["tp"]}}
// TP2IR: dist.mesh @mesh shape [2] axes ["tp"] links [#dist.link<bandwidth = 1.000000e+10, latency = 5.000000e-06>]
// TP2IR-COUNT-12: dist.shard %{{.*}} to <@mesh, {{\[\[}}"tp"], []]>
// TP2IR-NOT: dist.shard
// With propagation, the plan's annotations give the whole model: the
// lookup a partial sum, each layer's O and down row-split with partial
// products, the logits split by vocabulary columns.
// CHAIN: graph.embedding {{.*}}partial = ["tp"]
// CHAIN-COUNT-4: graph.matmul {{.*}}dist.sharding = #dist.sharding<@mesh, {{\[\[}}], []], partial = ["tp"]>
// CHAIN: graph.matmul {{.*}}dist.sharding = #dist.sharding<@mesh, {{\[\[}}], ["tp"]]>{{.*}} -> tensor<?x32xf32>
// CHAIN-NEXT: return
//
// A link of a second a message: tensor parallel's 5 all-reduces and a
// gather a token cost 11 s, a pipeline's send and the token's way back 2 s.
// SLOW: pp=2: 2.303e+00 s a token
// SLOW: tp=2: 1.115e+01 s a token
// SLOW: chosen: pp=2
// (A second a message also makes one piece of a prompt the fastest: no
// micro-batches.)
// SLOW: dist.plan = {bytes_per_rank = 159744 : i64, micro_batch = 0 : i64, pp = ["pp"], prompt_seconds = {{.*}}, seconds_per_token = {{.*}}, stages = array<i64: 0, 1>, tp = []}
// SLOW: dist.mesh @mesh shape [2] axes ["pp"]
// SLOW-NOT: dist.shard
//
// Two hosts of two: the slow axis (between hosts) carries the pipeline, the
// fast one tensor parallelism; four stages of two layers and four-way
// tensor parallelism over two KV heads do not apply.
// GRID: pp=2 pp=2: does not apply: more stages (4) than layers (2)
// GRID: tp=2 pp=2: {{.*}} s a token
// GRID: pp=2 tp=2: {{.*}} s a token
// GRID: tp=2 tp=2: does not apply: the KV heads (2) do not divide over 4 tensor-parallel ranks
// GRID: chosen: pp=2 tp=2
// GRID: dist.plan = {{{.*}}pp = ["pp"], {{.*}}stages = array<i64: 0, 1>, tp = ["tp"]}
// GRID: dist.mesh @mesh shape [2, 2] axes ["pp", "tp"] links [#dist.link<bandwidth = 1.000000e+10, latency = 1.000000e+00>, #dist.link<bandwidth = 1.000000e+10, latency = {{.*}}>]
// GRID: dist.shard %{{.*}} to <@mesh, {{\[\[}}"tp"], []]>
//
// At the default 20 GB/s the pipeline is the faster (its one send against
// tensor parallelism's all-reduces), but it needs 159744 bytes a rank and
// only 157000 fit: tensor parallelism.
// MEM: pp=2: does not apply: needs 159744 bytes a rank, more than 157000
// MEM: chosen: tp=2
//
// Four ranks: four-way tensor parallelism over two KV heads and four stages
// of two layers: no plan, each candidate's reason noted.
// NONE: error: dist-plan: no plan for a mesh of 4
// NONE: note: pp=4: more stages (4) than layers (2)
// NONE: note: tp=4: the KV heads (2) do not divide over 4 tensor-parallel ranks
// BAD: error: dist-plan: bad mesh '2x0' (expected ranks per axis, e.g. 2, 4, 2x2)
// BADLINK: error: dist-plan: bandwidths must be positive, latencies and the memory limit non-negative, all finite
//
// A pipeline's prompt in micro-batches of k tokens: (512 / k + 1) stage
// times of k tokens, each k x 73.7 us of arithmetic (73728 FLOPs, 36864
// multiply-adds, a token a stage at 1 GFLOP/s) and 147.5 us for the stage's
// 147456 bytes of weights at 1 GB/s: least at k = 32 (sqrt(147.5 x 512 /
// 73.7) = 32).
// MICRO: pp=2: {{.*}} 4.280e-02 s a 512-token prompt in micro-batches of 32
// MICRO: tp=2: {{.*}} s a 512-token prompt{{$}}
// A micro-batch given is kept.
// GIVEN: dist.plan = {bytes_per_rank = 159744 : i64, micro_batch = 64 : i64, pp = ["pp"]
// A micro-batch larger than the prompt costs as the whole prompt (one
// piece: 2 stage times of 512 tokens).
// LARGE: pp=2: {{.*}} 1.561e-03 s a 512-token prompt in micro-batches of 1024
// BADRATE: error: dist-plan: the FLOP rate must be positive and finite, got 0
// BADMICRO: error: dist-plan: the micro-batch must be 0 or more tokens (-1: the cost model's choice), got -2
// NOPIPE: error: dist-plan: a micro-batch of 8 tokens, but the plan has no pipeline stages (roles 'tp')
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
