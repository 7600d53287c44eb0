// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

!cache = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 2, head_dim = 128, element_type = f32>

// GQA (4 query heads, 2 KV heads): the rows' nest runs over the KV heads
// (on the threads), and the two query heads of a group share each load of
// their KV head's keys (q.k) and values (p.V): the group is a register tile
// inside the loop over the reduction's steps, each head's dot product in
// its own 64 lanes (vec_dot's order), tree and all.
// CHECK-LABEL: func.func @decode_gqa
// CHECK: tl.for %[[KV:.+]] = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: tl.block "attention_scores_rf_init"
// CHECK-SAME: memref<2x64xf32>
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: arith.muli
// CHECK-NEXT: tl.for %[[G:.+]] = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c64{{.*}} kind(vectorized)
// CHECK: tl.block "attention_scores_rf" ({{.*}} = spatial %[[KV]], {{.*}} = spatial %[[G]],
// CHECK: tl.block "attention_scores_tree0"
// CHECK: tl.block "attention_values_rf_init"
// CHECK-SAME: memref<2x64xf32>
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: arith.muli
// CHECK-NEXT: tl.for %[[G2:.+]] = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c64{{.*}} kind(vectorized)
// CHECK: tl.block "attention_values_rf" ({{.*}} = spatial %[[KV]], {{.*}} = spatial %[[G2]],
func.func @decode_gqa(%q: tensor<1x512xf32>, %k: tensor<1x256xf32>, %c: !cache, %p: index) -> tensor<1x512xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, scale = 0.25 : f32} : tensor<1x512xf32>, tensor<1x256xf32>, tensor<1x256xf32>, !cache
  return %0 : tensor<1x512xf32>
}
