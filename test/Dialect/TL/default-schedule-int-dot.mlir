// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

// A prefill product of q8_0 weights with 8-bit activations (llama.cpp
// mode): weights stationary (rows outermost, on the threads) in register
// tiles of 2 rows x 4 tokens that share each block's loads: the tile loops
// inside the loop over blocks, unrolled, each output's integer sums and f32
// partials its own (the order of its own dot product). The partials' fill
// and tree, which index the tile, are unrolled too (their stack buffer
// stays in registers). The remaining tokens (fewer than 4) follow, one at a
// time.
// The activations' quantization first: per block, its elements in vector
// lanes (the block's scale the same in every lane).
// CHECK-LABEL: func.func @prefill_q8
// CHECK: tl.block "act_scale"
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK-NEXT: arith.addi
// CHECK-NEXT: tl.block "act_quant"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c4{{.*}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK: tl.block "matmul_iscale_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK: tl.block "matmul_idot"
// CHECK: tl.block "matmul_iscale_rf"
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK: tl.block "matmul_iscale_tree0"
// CHECK: tl.block "matmul_iscale" (
// CHECK: tl.for %{{.+}} = %{{.+}} to %c8 step %{{.+}} kind(parallel)
// CHECK: tl.block "matmul_idot_tail"
func.func @prefill_q8(%x: tensor<?x256xf32>, %w: !graph.weights) -> tensor<?x8xf32> attributes {llmc.phase = "prefill"} {
  %q8 = graph.param %w["q8"] {blob_offset = 0 : i64} : tensor<8x256x!graph.q8_0>
  %0 = graph.matmul %x, %q8 {act_type = !graph.q8_0} : tensor<?x256xf32>, tensor<8x256x!graph.q8_0> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
