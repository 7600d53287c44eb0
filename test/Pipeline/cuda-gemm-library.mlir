// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_90,+cublas | FileCheck %s
// RUN: llm-opt %s --compile-to=tl --llmc-target=cuda:sm_90,+cublas | FileCheck %s --check-prefix=TL
// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_90 | FileCheck %s --check-prefix=NOLIB

// +cublas: the prompt's product of an f16 weight is cuBLAS's. In tl, its
// band's three loops are kind library, its f32 activations two f16 halves
// written by a nest before it. The dispatch program: the halves' kernel,
// then two gemm entries (the high half's, the low half's scaled by 2^-11
// into the sums), m the rows of the call's logits (graph-output-rows); the
// residual added into it (x + x . w^T) a copy of x into the output first,
// both products then from its values (beta 1). Decode's product stays a
// kernel (no "ge" in its part of the program). Without +cublas the product
// runs on the tensor cores (WMMA).
// TL: tl.block "matmul_halves
// TL: tl.for {{.*}} kind(library)
// TL-NEXT: tl.for {{.*}} kind(library)
// TL-NEXT: tl.for {{.*}} kind(library)
// TL-NEXT: tl.block "matmul
// CHECK: \22phases\22:{\22decode\22:[{{([^g]|g[^e])*}}],\22prefill\22:[
// CHECK-SAME: {\22copy\22:{{[^}]*}}\22dst\22:{\22buffer\22:\22logits\22,\22offset\22:0}
// CHECK-SAME: {\22gemm\22:{\22a\22:{\22buffer\22:\22arena\22,{{[^}]*}}},\22alpha\22:1,\22b\22:{\22buffer\22:\22weights\22,\22bytes\22:131072,\22offset\22:65536},\22beta\22:1,\22k\22:256,\22lda\22:256,\22ldb\22:256,\22ldc\22:256,\22m\22:\22n_out\22,\22n\22:256,\22out\22:{\22buffer\22:\22logits\22,{{[^}]*}}},\22type\22:\22f16\22}}
// CHECK-SAME: {\22gemm\22:{{[^}]*}}},\22alpha\22:0.00048828125,{{[^}]*}}},\22beta\22:1,
// CHECK-NOT: wmma
// NOLIB-NOT: gemm
// NOLIB: wmma.mma.sync
!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 64, element_type = f32>
func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x256xf32> {
  %emb = graph.param %w["emb"] : tensor<64x256xf32>
  %x = graph.embedding %emb[%tokens] : tensor<64x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
  %wq = graph.param %w["wq"] : tensor<256x256xf16>
  %y = graph.matmul %x, %wq : tensor<?x256xf32>, tensor<256x256xf16> -> tensor<?x256xf32>
  %z = graph.add %x, %y : tensor<?x256xf32>, tensor<?x256xf32>
  return %z : tensor<?x256xf32>
}
