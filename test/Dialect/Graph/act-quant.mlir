// RUN: llm-opt %s -split-input-file -graph-act-quant=mode=llama.cpp | FileCheck %s
// RUN: llm-opt %s -split-input-file -graph-act-quant=mode=llama.cpp -graph-act-quant | FileCheck %s --check-prefix=EXACT
// RUN: llm-opt %s -split-input-file -graph-act-quant="mode=llama.cpp isa=avx512" | FileCheck %s --check-prefix=AVX
// RUN: llm-opt %s -split-input-file -graph-act-quant="mode=llama.cpp isa=avx512" -graph-act-quant | FileCheck %s --check-prefix=EXACT
// RUN: llm-opt %s -split-input-file -graph-act-quant="mode=llama.cpp isa=avx512bf16" | FileCheck %s --check-prefix=BF16
// RUN: not llm-opt %s -split-input-file -graph-act-quant=mode=int4 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not llm-opt %s -split-input-file -graph-act-quant="mode=llama.cpp isa=sse2" 2>&1 | FileCheck %s --check-prefix=BADISA

// llama.cpp's vec_dot_type per stored weight type: F16/BF16 weights (here f32
// params widened from 16-bit data: the stored type is on the source) round
// the activations to f16/bf16; Q8_0/Q4_0 quantize them to Q8_0 blocks, K-quants
// to Q8_K; F32 weights keep exact f32 products. mode=exact removes it all.
// BAD: unknown mode 'int4' (expected exact or llama.cpp)
// BADISA: unknown isa 'sse2' (expected none, avx512 or avx512bf16)
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

// isa=avx512 (llama.cpp mode): RoPE, SiLU and attention follow ggml's
// AVX-512 kernels; without it, or in exact mode, they do not.
// AVX: func.func @f32_ops
// AVX: graph.rope {{.*}}ggml_avx512
// AVX: graph.silu {{.*}}{ggml_avx512}
// AVX: graph.attention {{.*}}ggml_avx512
// CHECK-LABEL: func.func @f32_ops
// CHECK-NOT: ggml_avx512
// EXACT-NOT: ggml_avx512
!c = !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 1, head_dim = 4, element_type = f32>
func.func @f32_ops(%x: tensor<?x4xf32>, %c: !c, %p: index) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %0 = graph.rope %x, %p {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x4xf32>
  %1 = graph.silu %0 : tensor<?x4xf32>
  %2 = graph.attention %1, %1, %1, %c, %p {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !c
  return %1, %2 : tensor<?x4xf32>, tensor<?x4xf32>
}

// -----

// BF16 matmuls follow VDPBF16PS only with isa=avx512bf16.
// AVX-LABEL: func.func @bf16_matmul
// AVX-NOT: ggml_avx512
// AVX: return
// BF16-LABEL: func.func @bf16_matmul
// BF16: graph.matmul {{.*}}ggml_avx512
func.func @bf16_matmul(%x: tensor<?x64xf32>, %w: !graph.weights) -> tensor<?x4xf32> {
  %b = graph.param %w["b"] {source = #graph.extern<file = "m.gguf", offset = 0, dtype = bf16>} : tensor<4x64xbf16>
  %0 = graph.matmul %x, %b : tensor<?x64xf32>, tensor<4x64xbf16> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
