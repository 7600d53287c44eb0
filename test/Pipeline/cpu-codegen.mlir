// RUN: llm-opt %s --compile-to=llvm --llmc-target=cpu:znver4 | FileCheck %s --check-prefixes=CHECK,AVX512
// RUN: llm-opt %s --compile-to=llvm --llmc-target=cpu:x86-64-v3 | FileCheck %s --check-prefixes=CHECK,AVX2

// A plain compile reaches the machine code with the default schedule's loop
// kinds: parallel loops as OpenMP work-sharing loops (threads), vectorized
// lanes as LLVM vector arithmetic of the target's width (fused
// multiply-adds in the matmul's lanes), in both the decode and the prefill
// version. (The f32 weight's rows are interleaved, the exact mode's layout:
// its outputs in lanes, the groups of rows on the threads.)
// CHECK: llvm.func @forward_prefill
// CHECK: omp.parallel
// CHECK: omp.wsloop
// AVX512: llvm.intr.fma({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// AVX2: llvm.intr.fma({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK: llvm.func @forward_decode
// CHECK: omp.parallel
// CHECK: omp.wsloop
// AVX512: llvm.intr.fma({{.*}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>) -> vector<16xf32>
// AVX2: llvm.intr.fma({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 64, element_type = f32>
func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x256xf32> {
  %emb = graph.param %w["emb"] : tensor<64x256xf32>
  %x = graph.embedding %emb[%tokens] : tensor<64x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
  %wq = graph.param %w["wq"] : tensor<256x256xf32>
  %y = graph.matmul %x, %wq : tensor<?x256xf32>, tensor<256x256xf32> -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}
