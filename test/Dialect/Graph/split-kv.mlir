// RUN: llm-opt %s -graph-split-kv="target=cpu:x86-64-v3,cores=4" | FileCheck %s
// RUN: llm-opt %s -graph-split-kv="target=cpu:x86-64-v3,cores=1" | FileCheck %s --check-prefix=ONE
// RUN: not llm-opt %s -graph-split-kv="target=cpu:x86-64-v3,cores=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: llm-opt %s -graph-split-kv="target=cuda:sm_90" | FileCheck %s --check-prefix=GPU
// RUN: llm-opt %s -graph-split-kv="target=vulkan:1.3,cores=6" | FileCheck %s --check-prefix=VK
// RUN: llm-opt %s -graph-split-kv="target=vulkan:1.3" | FileCheck %s --check-prefix=ONE

// Flash attention (kv_tile) with fewer KV heads than the target's cores:
// kv_splits = cores (4 cores: one KV head or three, 4 parts, each the
// threads' share of every KV head's positions); as many KV heads as cores,
// or the two-pass softmax (llama.cpp mode, no kv_tile), or one core, or a
// cache whose positions one part holds: unchanged. The parts are at most
// what the cache can fill (multiples of kv_pad, at least 16, long).
// CHECK-LABEL: func.func @attention
// CHECK: graph.attention {{.*}}kv_splits = 4 : i64
// CHECK: graph.attention {{.*}}kv_splits = 4 : i64
// CHECK-NOT: kv_splits
// CHECK: return
// ONE-NOT: kv_splits
// BAD: error: graph-split-kv: {{.*}}cores=0
// On a GPU, a workgroup per KV head and part, two for each compute unit:
// ceil(2 * cores / KV heads) parts (sm_90's 132 SMs: 264 and 88 for one
// KV head and three, 66 for four; a Vulkan device stating 6 compute
// units: 12, 4, 3); a Vulkan device by default has one, no split.
// GPU: graph.attention {{.*}}kv_splits = 264 : i64
// GPU: graph.attention {{.*}}kv_splits = 88 : i64
// GPU: graph.attention {{.*}}kv_splits = 66 : i64
// GPU-NOT: kv_splits
// VK: graph.attention {{.*}}kv_splits = 12 : i64
// VK: graph.attention {{.*}}kv_splits = 4 : i64
// VK: graph.attention {{.*}}kv_splits = 3 : i64
// VK-NOT: kv_splits
!c1 = !graph.kv_cache<layers = 1, max_seq = 32768, kv_heads = 1, head_dim = 4, element_type = f32>
!c3 = !graph.kv_cache<layers = 1, max_seq = 32768, kv_heads = 3, head_dim = 4, element_type = f32>
!c4 = !graph.kv_cache<layers = 1, max_seq = 32768, kv_heads = 4, head_dim = 4, element_type = f32>
!short = !graph.kv_cache<layers = 1, max_seq = 64, kv_heads = 1, head_dim = 4, element_type = f32>
func.func @attention(%q: tensor<?x48xf32>, %k1: tensor<?x4xf32>, %k3: tensor<?x12xf32>, %k4: tensor<?x16xf32>, %c1: !c1, %c3: !c3, %c4: !c4, %short: !short, %p: index) -> (tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>) {
  %0 = graph.attention %q, %k1, %k1, %c1, %p {layer = 0 : i64, num_heads = 12 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<?x48xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !c1
  %1 = graph.attention %q, %k3, %k3, %c3, %p {layer = 0 : i64, num_heads = 12 : i64, num_kv_heads = 3 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<?x48xf32>, tensor<?x12xf32>, tensor<?x12xf32>, !c3
  %2 = graph.attention %q, %k4, %k4, %c4, %p {layer = 0 : i64, num_heads = 12 : i64, num_kv_heads = 4 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<?x48xf32>, tensor<?x16xf32>, tensor<?x16xf32>, !c4
  %3 = graph.attention %q, %k1, %k1, %c1, %p {layer = 0 : i64, num_heads = 12 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, softmax_block = 16 : i64} : tensor<?x48xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !c1
  // A cache of 64 positions: one part of kv_pad = 64 holds them all.
  %4 = graph.attention %q, %k1, %k1, %short, %p {layer = 0 : i64, num_heads = 12 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<?x48xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !short
  return %0, %1, %2, %3, %4 : tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>, tensor<?x48xf32>
}
