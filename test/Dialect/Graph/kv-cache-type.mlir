// RUN: llm-opt %s -graph-kv-cache-type -split-input-file -verify-diagnostics | FileCheck %s
// RUN: llm-opt %s -graph-kv-cache-type=element-type=f32 -split-input-file -verify-diagnostics | FileCheck %s --check-prefix=F32
// RUN: not llm-opt %s -graph-kv-cache-type=element-type=bf16 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: graph-kv-cache-type: element-type must be f16 or f32, got 'bf16'

// The entry's cache argument gets the new element type (the function type
// with it); the attention sees it through the value. f32 leaves it alone.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[C:[a-z0-9]+]]: !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 4, element_type = f16>
// CHECK: graph.attention %{{.+}}, %{{.+}}, %{{.+}}, %[[C]], %{{.+}} {{.+}} <layers = 1, max_seq = 8, kv_heads = 1, head_dim = 4, element_type = f16>
// F32: element_type = f32>
// F32-NOT: element_type = f16
!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 4, element_type = f32>
func.func @forward(%x: tensor<?x4xf32>, %c: !cache, %p: index) -> tensor<?x4xf32> {
  %0 = graph.attention %x, %x, %x, %c, %p {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !cache
  return %0 : tensor<?x4xf32>
}
