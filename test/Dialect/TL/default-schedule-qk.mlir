// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

!cache = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 2, head_dim = 32, element_type = f32, values_by_position = true, keys_by_dim = true>

// Flash attention's q.k with the keys by dim (the exact mode on a CPU): the
// positions (contiguous in the keys) in tiles of 4 vectors of 16 outside the
// head dim, each tile accumulating in registers ([4 x 16] from 0, FMAs: per
// element of the head dim a broadcast of the query and a vector of keys per
// 16 positions, no horizontal sum) and stored into the scores after it.
// CHECK-LABEL: func.func @prefill_qk
// CHECK: %[[ACC:[a-z0-9_]+]] = memref.alloca() {{.*}} : memref<4x16xf32>
// CHECK: tl.block "attention_scores_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c32{{.*}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_scores_rf"
// CHECK: math.fma
// CHECK: affine.store %{{.+}}, %[[ACC]]
// CHECK: tl.block "attention_scores" (
// CHECK-SAME: reads(%[[ACC]]
// CHECK-SAME: {{\) \{$}}
// CHECK-NEXT: affine.load %[[ACC]]
// CHECK-NEXT: affine.store
// CHECK: tl.block "softmax_max
func.func @prefill_qk(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %c: !cache, %p: index) -> tensor<?x64xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 32 : i64, scale = 0.25 : f32, kv_tile = 128 : i64} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, !cache
  return %0 : tensor<?x64xf32>
}

// With a GQA group (2 query heads per KV head) the group's loop moves inside
// the head dim: each vector of keys serves both heads ([2 x 4 x 16]).
// CHECK-LABEL: func.func @prefill_qk_gqa
// CHECK: %[[ACC:[a-z0-9_]+]] = memref.alloca() {{.*}} : memref<2x4x16xf32>
// CHECK: tl.for %{{.+}} = %{{.+}} to %c32{{.*}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_scores_rf"
// CHECK: math.fma
func.func @prefill_qk_gqa(%q: tensor<?x128xf32>, %k: tensor<?x64xf32>, %c: !cache, %p: index) -> tensor<?x128xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 32 : i64, scale = 0.25 : f32, kv_tile = 128 : i64} : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32>, !cache
  return %0 : tensor<?x128xf32>
}

!cq = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 2, head_dim = 64, element_type = f32, values_by_position = true, keys_by_dim = true>

// A query tile of 4 rows (q_tile) and a GQA group of 2 heads: the 8 rows move
// inside the head dim, each vector of keys serving all of them, with as many
// vectors of positions each as 16 registers hold for 8 rows: 2
// ([4 x 2 x 2 x 16]).
// CHECK-LABEL: func.func @prefill_q_tile_gqa
// CHECK: %[[ACC:[a-z0-9_]+]] = memref.alloca() {{.*}} : memref<4x2x2x16xf32>
// CHECK: tl.block "attention_scores_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c64{{.*}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_scores_rf"
// CHECK: math.fma
func.func @prefill_q_tile_gqa(%q: tensor<?x256xf32>, %k: tensor<?x128xf32>, %c: !cq, %p: index) -> tensor<?x256xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, scale = 0.25 : f32, kv_pad = 64 : i64, kv_tile = 128 : i64, q_tile = 4 : i64} : tensor<?x256xf32>, tensor<?x128xf32>, tensor<?x128xf32>, !cq
  return %0 : tensor<?x256xf32>
}
