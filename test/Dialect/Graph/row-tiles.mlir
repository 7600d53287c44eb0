// RUN: llm-opt %s -graph-row-tiles="target=vulkan" | FileCheck %s
// RUN: llm-opt %s -graph-row-tiles="target=cpu:x86-64-v3,cores=4" | FileCheck %s --check-prefix=CPU
// RUN: not llm-opt %s -graph-row-tiles="target=vulkan:2.0" 2>&1 | FileCheck %s --check-prefix=BAD

// On a GPU, a flash attention (kv_tile) keeps a scores tile per row; the
// two-pass softmax (no kv_tile) has none. A CPU's rows reuse one tile.
// CHECK-LABEL: func.func @attention
// CHECK: graph.attention {{.*}}row_tiles = true
// CHECK: graph.attention
// CHECK-NOT: row_tiles
// CHECK: return
// CPU-NOT: row_tiles
// BAD: error: graph-row-tiles: {{.*}}vulkan:2.0
!c = !graph.kv_cache<layers = 1, max_seq = 64, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !c, %p: index) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !c
  %1 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, softmax_block = 16 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !c
  return %0, %1 : tensor<?x16xf32>, tensor<?x16xf32>
}
