// RUN: llm-opt %s -graph-kv-layout="target=cpu:x86-64-v3,cores=2" -split-input-file | FileCheck %s
// RUN: llm-opt %s -graph-kv-layout="target=vulkan" -split-input-file | FileCheck %s --check-prefix=GPU
// RUN: not llm-opt %s -graph-kv-layout="target=cpu:pentium" -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: graph-kv-layout: {{.*}}pentium

// A CPU's flash attention (kv_tile): the entry's cache stores the values by
// position and the keys transposed (the function type with it; the attention
// sees it through the value). A GPU keeps the values transposed and the keys
// by position.
// CHECK-LABEL: func.func @flash
// CHECK-SAME: %[[C:[a-z0-9]+]]: !graph.kv_cache<layers = 1, max_seq = 64, kv_heads = 2, head_dim = 4, element_type = f32, values_by_position = true, keys_by_dim = true>
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[C]], %{{.+}} {{.+}}values_by_position = true, keys_by_dim = true>
// GPU-LABEL: func.func @flash
// GPU-NOT: values_by_position
// GPU-NOT: keys_by_dim
// GPU: return
!c = !graph.kv_cache<layers = 1, max_seq = 64, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @flash(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !c, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !c
  return %0 : tensor<?x16xf32>
}

// -----

// The two-pass softmax (llama.cpp's mode) sums p.V over rows of positions in
// ggml's order: its values stay transposed, on a CPU in blocks of one f32
// vector's positions (8 on x86-64-v3: p.V's lanes read one run of the
// context); a GPU keeps them as they are.
// CHECK-LABEL: func.func @two_pass
// CHECK-SAME: !graph.kv_cache<layers = 1, max_seq = 64, kv_heads = 2, head_dim = 4, element_type = f16, values_block = 8>
// CHECK-NOT: values_by_position
// CHECK-NOT: keys_by_dim
// CHECK: return
// GPU-LABEL: func.func @two_pass
// GPU-NOT: values_block
// GPU: return
!c = !graph.kv_cache<layers = 1, max_seq = 64, kv_heads = 2, head_dim = 4, element_type = f16>
func.func @two_pass(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !c, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, softmax_block = 16 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !c
  return %0 : tensor<?x16xf32>
}

// -----

// A context that is no whole number of blocks keeps the plain layout.
// CHECK-LABEL: func.func @two_pass_odd_context
// CHECK-NOT: values_block
// CHECK: return
!c = !graph.kv_cache<layers = 1, max_seq = 60, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @two_pass_odd_context(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !c, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !c
  return %0 : tensor<?x16xf32>
}
