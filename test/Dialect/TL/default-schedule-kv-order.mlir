// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

!cache = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 2, head_dim = 16, element_type = f32>

// Prefill attention: the rows' nest over (tokens, KV heads), whose blocks
// run over the context (a dynamic number of positions) and read the KV
// cache per KV head, alike for every token, puts the KV heads outermost, on
// the threads, and the tokens inside: one KV head's keys and values stay in
// the cache while every token reads them.
// CHECK-LABEL: func.func @prefill_attention
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %dim{{.*}} step
// CHECK-NOT: kind(parallel)
// CHECK: tl.block "attention_scores
// CHECK-NOT: kind(parallel)
// CHECK: tl.block "softmax_max
// CHECK-NOT: kind(parallel)
// CHECK: tl.block "softmax_inv"
// CHECK-NOT: kind(parallel)
// CHECK: tl.block "attention_values_rf_init"
func.func @prefill_attention(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %c: !cache, %p: index) -> tensor<?x64xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !cache
  return %0 : tensor<?x64xf32>
}

// -----

// The same without GQA (a KV head per query head): the group loops are
// gone, so softmax_inv sits directly in the row loops. The blocks' own rules
// move only loops that hold no other block: softmax_inv, written along the
// heads, does not put the heads innermost (which would take them off the
// threads and stream every head's keys and values once per token).
!cache4 = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 4, head_dim = 16, element_type = f32>
// CHECK-LABEL: func.func @prefill_attention_mha
// CHECK: tl.for %[[H:.+]] = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK-NEXT: tl.for %[[S:.+]] = %{{.+}} to %dim{{.*}} step
// CHECK-NOT: kind(parallel)
// CHECK: tl.block "softmax_inv" (%{{.+}} = spatial %[[S]], %{{.+}} = spatial %[[H]],
func.func @prefill_attention_mha(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %c: !cache4, %p: index) -> tensor<?x64xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, !cache4
  return %0 : tensor<?x64xf32>
}

// -----

// A float product over (tokens, rows) reads its weight alike for every
// token too, but over no dynamic run of positions: tileMatmul's order, the
// tiles of tokens outermost (4 at a time), then the rows' tiles (16 of 4).
// CHECK-LABEL: func.func @prefill_matmul
// CHECK: %[[TILES:.+]] = arith.divui %dim{{.*}}, %c4
// CHECK: tl.for %{{.+}} = %{{.+}} to %[[TILES]] step %{{[a-z0-9_]+}} kind(parallel)
// CHECK-NOT: tl.block
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step
// CHECK: tl.block "matmul
func.func @prefill_matmul(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> tensor<?x64xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
