// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_90 | FileCheck %s
// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_90,+cublas | FileCheck %s --check-prefix=LIB
// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_90,-mma | FileCheck %s --check-prefix=NOMMA

// A prompt's products of Q8_0 and Q4_0 weights (the keys' and the values',
// computed for every token) on the tensor cores: the activations' f16
// halves (once for both), each weight's halves [N, K] written by a kernel
// of its own (dequant_halves), then the band of three products (WMMA: three
// mma a fragment pair); with +cublas three GEMMs each (the cross terms
// scaled by 2^-11). The two products' bands are one kernel (equal nests over
// the halves). Without matrix units the products read the blocks.
// CHECK-DAG: \22name\22:\22forward_prefill_matmul_halves\22
// CHECK-DAG: \22name\22:\22forward_prefill_matmul_weight_halves\22
// CHECK-DAG: \22name\22:\22forward_prefill_matmul_1_weight_halves\22
// CHECK-DAG: \22name\22:\22forward_prefill_matmul\22,\22subgroup\22:32
// CHECK: .visible .entry forward_prefill_matmul(
// CHECK-COUNT-3: wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32
// LIB-COUNT-6: {\22gemm\22:
// LIB-NOT: wmma.mma
// NOMMA-NOT: weight_halves
// NOMMA-NOT: wmma
!cache = !graph.kv_cache<layers = 1, max_seq = 64, kv_heads = 2, head_dim = 128, element_type = f32>
func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x256xf32> {
  %emb = graph.param %w["emb"] : tensor<64x256xf32>
  %h = graph.embedding %emb[%tokens] : tensor<64x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
  %wk = graph.param %w["wk"] : tensor<256x256x!graph.q8_0>
  %k = graph.matmul %h, %wk : tensor<?x256xf32>, tensor<256x256x!graph.q8_0> -> tensor<?x256xf32>
  %wv = graph.param %w["wv"] : tensor<256x256x!graph.q4_0>
  %v = graph.matmul %h, %wv : tensor<?x256xf32>, tensor<256x256x!graph.q4_0> -> tensor<?x256xf32>
  %a = graph.attention %h, %k, %v, %cache, %pos0 {layer = 0 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, scale = 0.088 : f32} : tensor<?x256xf32>, tensor<?x256xf32>, tensor<?x256xf32>, !cache
  return %a : tensor<?x256xf32>
}
