// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_90 | FileCheck %s
// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_80 | FileCheck %s
// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_90,-mma | FileCheck %s --check-prefix=NOMMA

// A CUDA compile of a prompt matmul of an f16 weight: the activations' two
// f16 halves, then the product's whole tiles of 32 tokens on the tensor
// cores through WMMA (m16n16k16: a row-major, the weight's rows read as
// b's columns, f32 sums), the tail on the threads; decode's product
// unchanged. The kernel records its subgroup.
// CHECK: \22name\22:\22forward_prefill_matmul_halves\22
// CHECK-SAME: \22name\22:\22forward_prefill_matmul\22,\22subgroup\22:32,\22workgroup\22:[32,2,1]
// CHECK: .visible .entry forward_prefill_matmul(
// CHECK-SAME: .maxntid 32, 2, 1
// CHECK-SAME: wmma.load.a.sync.aligned.row.m16n16k16.f16
// CHECK-SAME: wmma.load.b.sync.aligned.col.m16n16k16.f16
// CHECK-SAME: wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32
// CHECK-SAME: wmma.store.d.sync.aligned.row.m16n16k16.f32
// CHECK-SAME: .visible .entry forward_prefill_matmul_tail(
// NOMMA-NOT: wmma
// NOMMA-NOT: _halves
!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 64, element_type = f32>
func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x64xf32> {
  %emb = graph.param %w["emb"] : tensor<64x256xf32>
  %x = graph.embedding %emb[%tokens] : tensor<64x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
  %wq = graph.param %w["wq"] : tensor<64x256xf16>
  %y = graph.matmul %x, %wq : tensor<?x256xf32>, tensor<64x256xf16> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
