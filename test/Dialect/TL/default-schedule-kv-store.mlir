// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

!cache = !graph.kv_cache<layers = 1, max_seq = 256, kv_heads = 8, head_dim = 64, element_type = f32>

// A prompt's KV store, a nest for the keys and one for the values. The keys
// ([position][dim]) are an elementwise copy: the positions on the threads,
// the head dim in lanes. The values go transposed ([dim][position]) at a
// stride of max_seq along the head dim, contiguous along the positions:
// those move innermost, into lanes (a vector store per 16 positions, the
// remainder peeled), the reads gathered lane by lane; the threads take the
// heads (the independence analysis cannot tell the positions' transposed
// stores apart; one head per cache slice), moved outermost.
// CHECK-LABEL: func.func @prefill_kv_store
// CHECK: tl.for %{{.+}} = %{{.+}} to %dim{{.*}} kind(parallel)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "kv_store"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c8{{.*}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c64{{.*}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "kv_store_v"
// CHECK: tl.block "kv_store_v_tail"
func.func @prefill_kv_store(%q: tensor<?x512xf32>, %k: tensor<?x512xf32>, %c: !cache, %p: index) -> tensor<?x512xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 8 : i64, num_kv_heads = 8 : i64, head_dim = 64 : i64, scale = 0.125 : f32} : tensor<?x512xf32>, tensor<?x512xf32>, tensor<?x512xf32>, !cache
  return %0 : tensor<?x512xf32>
}
