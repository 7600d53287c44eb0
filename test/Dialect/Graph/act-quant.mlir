// RUN: llm-opt %s -split-input-file -graph-act-quant=mode=llama.cpp | FileCheck %s
// RUN: llm-opt %s -split-input-file -graph-act-quant=mode=llama.cpp -graph-act-quant | FileCheck %s --check-prefix=EXACT
// RUN: not llm-opt %s -split-input-file -graph-act-quant=mode=int4 2>&1 | FileCheck %s --check-prefix=BAD

// llama.cpp's vec_dot_type per stored weight type: F16/BF16 weights (here f32
// params widened from 16-bit data: the stored type is on the source) round
// the activations to f16/bf16; Q8_0/Q4_0 quantize them to Q8_0 blocks, K-quants
// to Q8_K; F32 weights keep exact f32 products. mode=exact removes it all.
// BAD: unknown mode 'int4' (expected exact or llama.cpp)
// EXACT-NOT: act_type
// CHECK-LABEL: func.func @kinds
func.func @kinds(%x: tensor<?x256xf32>, %w: !graph.weights) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
  %f32 = graph.param %w["f32"] {source = #graph.extern<file = "m.gguf", offset = 0, dtype = f32>} : tensor<4x256xf32>
  %f16 = graph.param %w["f16"] {source = #graph.extern<file = "m.gguf", offset = 0, dtype = f16>} : tensor<4x256xf32>
  %bf16 = graph.param %w["bf16"] {source = #graph.extern<file = "m.gguf", offset = 0, dtype = bf16>} : tensor<4x256xf32>
  %q8 = graph.param %w["q8"] : tensor<4x256x!graph.q8_0>
  %q4 = graph.param %w["q4"] : tensor<4x256x!graph.q4_0>
  %q4k = graph.param %w["q4k"] : tensor<4x256x!graph.q4_k>
  %q6k = graph.param %w["q6k"] : tensor<4x256x!graph.q6_k>
  // CHECK: graph.matmul %{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<4x256xf32>
  %0 = graph.matmul %x, %f32 : tensor<?x256xf32>, tensor<4x256xf32> -> tensor<?x4xf32>
  // CHECK: graph.matmul {{.*}} {act_type = f16}
  %1 = graph.matmul %x, %f16 : tensor<?x256xf32>, tensor<4x256xf32> -> tensor<?x4xf32>
  // CHECK: graph.matmul {{.*}} {act_type = bf16}
  %2 = graph.matmul %x, %bf16 : tensor<?x256xf32>, tensor<4x256xf32> -> tensor<?x4xf32>
  // CHECK: graph.matmul {{.*}} {act_type = !graph.q8_0}
  %3 = graph.matmul %x, %q8 : tensor<?x256xf32>, tensor<4x256x!graph.q8_0> -> tensor<?x4xf32>
  // CHECK: graph.matmul {{.*}} {act_type = !graph.q8_0}
  %4 = graph.matmul %x, %q4 : tensor<?x256xf32>, tensor<4x256x!graph.q4_0> -> tensor<?x4xf32>
  // CHECK: graph.matmul {{.*}} {act_type = !graph.q8_k}
  %5 = graph.matmul %x, %q4k : tensor<?x256xf32>, tensor<4x256x!graph.q4_k> -> tensor<?x4xf32>
  // CHECK: graph.matmul {{.*}} {act_type = !graph.q8_k}
  %6 = graph.matmul %x, %q6k : tensor<?x256xf32>, tensor<4x256x!graph.q6_k> -> tensor<?x4xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// The numerics of the other ops, the same on every target (no ISA mark):
// llama.cpp's iterated RoPE angles, ggml's soft_max sums (f32 runs of 16)
// over a KV view padded to 64; exact mode: direct angles, the view padded to
// 64 as well (its sums run in any order: whole lanes, no ordered remainder in
// p.V) and flash attention over tiles of 256 positions.

// CHECK-LABEL: func.func @f32_ops
// CHECK: graph.rope {{.*}}angles = #graph.rope_angles<iterated>
// CHECK: graph.attention {{.*}}kv_pad = 64 : i64, layer{{.*}}softmax_block = 16 : i64
// EXACT-LABEL: func.func @f32_ops
// EXACT-NOT: iterated
// EXACT: graph.attention {{.*}}kv_pad = 64 : i64, kv_tile = 256 : i64
// EXACT-NOT: softmax_block
// EXACT: return
!c = !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 1, head_dim = 4, element_type = f32>
func.func @f32_ops(%x: tensor<?x4xf32>, %c: !c, %p: index) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %0 = graph.rope %x, %p {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x4xf32>
  %1 = graph.silu %0 : tensor<?x4xf32>
  %2 = graph.attention %1, %1, %1, %c, %p {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !c
  return %1, %2 : tensor<?x4xf32>, tensor<?x4xf32>
}

