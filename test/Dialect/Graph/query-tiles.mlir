// RUN: llm-opt %s -graph-query-tiles="target=cpu:znver4,cores=2" | FileCheck %s
// RUN: llm-opt %s -graph-query-tiles="target=cpu:x86-64-v3,cores=2" | FileCheck %s --check-prefix=AVX2
// RUN: llm-opt %s -graph-query-tiles="target=vulkan" | FileCheck %s --check-prefix=GPU
// RUN: not llm-opt %s -graph-query-tiles="target=cpu:pentium" 2>&1 | FileCheck %s --check-prefix=BAD

// On a CPU, an attention runs a prompt's rows in query tiles, flash
// attention (kv_tile) and the two-pass softmax alike: 4 rows with 32 vector
// registers (AVX-512), 2 with 16 (AVX2). A GPU keeps a row at a time (its
// rows run at once, a scores tile each).
// CHECK-LABEL: func.func @attention
// CHECK: graph.attention {{.*}}kv_tile = 256 : i64{{.*}}q_tile = 4 : i64
// CHECK: graph.attention {{.*}}q_tile = 4 : i64
// CHECK: return
// AVX2: graph.attention {{.*}}q_tile = 2 : i64
// AVX2: graph.attention {{.*}}q_tile = 2 : i64
// GPU-NOT: q_tile
// BAD: error: graph-query-tiles: {{.*}}pentium
!c = !graph.kv_cache<layers = 1, max_seq = 64, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !c, %p: index) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !c
  %1 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, softmax_block = 16 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !c
  return %0, %1 : tensor<?x16xf32>, tensor<?x16xf32>
}
