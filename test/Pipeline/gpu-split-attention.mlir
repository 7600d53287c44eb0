// RUN: llm-opt %s --compile-to=tl --llmc-target=vulkan:1.3,subgroup=8,workgroup=1024,cores=4 | FileCheck %s
// RUN: llm-opt %s --compile-to=tl --llmc-target=vulkan:1.3,subgroup=8,workgroup=1024 | FileCheck %s --check-prefix=ONE

// A GPU's decode attention split over the positions (graph-split-kv: a
// device of 4 compute units, 2 KV heads: ceil(2 * 4 / 2) = 4 parts): the
// heads' loop is distributed so that the parts (each a flash attention over
// its share of the positions: init, tiles of scores, softmax and values)
// are a launch of their own with a workgroup per head and part (parts on
// blockIdx.x, heads on blockIdx.y), and the parts' merge and the
// normalisation a launch per head after it. A device of one compute unit
// does not split: one launch per head.
// CHECK-LABEL: func.func private @forward_decode
// CHECK: tl.for %[[H:.*]] = %c0 to %c2 step %c1 kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for %[[P:.*]] = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK: tl.block "attention_init" ({{.*}} = spatial %[[H]], {{.*}} = spatial %[[P]])
// CHECK-NOT: thread("blockIdx
// CHECK: tl.block "attention_values"
// CHECK: tl.for {{.*}} to %c2 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK-NOT: thread("blockIdx
// CHECK: tl.block "attention_merge_max"
// CHECK-NOT: thread("blockIdx
// CHECK: tl.block "attention_normalize"
// ONE-LABEL: func.func private @forward_decode
// ONE-NOT: attention_merge
// ONE: return
!cache = !graph.kv_cache<layers = 1, max_seq = 512, kv_heads = 2, head_dim = 8, element_type = f32>
func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x16xf32> {
  %emb = graph.param %w["emb"] : tensor<32x16xf32>
  %h = graph.embedding %emb[%tokens] : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
  %k = graph.param %w["wk"] : tensor<16x16xf32>
  %kv = graph.matmul %h, %k : tensor<?x16xf32>, tensor<16x16xf32> -> tensor<?x16xf32>
  %a = graph.attention %h, %kv, %kv, %cache, %pos0 {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 8 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, !cache
  return %a : tensor<?x16xf32>
}
