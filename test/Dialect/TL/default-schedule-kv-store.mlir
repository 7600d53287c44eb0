// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

!cache = !graph.kv_cache<layers = 1, max_seq = 256, kv_heads = 8, head_dim = 64, element_type = f32>

// A prompt's KV store: the positions (outermost) write the transposed
// values at a stride of max_seq, which the independence analysis cannot
// tell apart, so the threads take the heads instead (perfectly nested
// below, independent: one head per cache slice), moved outermost.
// CHECK-LABEL: func.func @prefill_kv_store
// CHECK: tl.for %{{.+}} = %{{.+}} to %c8{{.*}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %dim{{.*}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for %{{.+}} = %{{.+}} to %c64{{.*}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.block "kv_store"
func.func @prefill_kv_store(%q: tensor<?x512xf32>, %k: tensor<?x512xf32>, %c: !cache, %p: index) -> tensor<?x512xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 8 : i64, num_kv_heads = 8 : i64, head_dim = 64 : i64, scale = 0.125 : f32} : tensor<?x512xf32>, tensor<?x512xf32>, tensor<?x512xf32>, !cache
  return %0 : tensor<?x512xf32>
}
