// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:x86-64-v3" | FileCheck %s --check-prefix=AVX2
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4,l2=64K" | FileCheck %s --check-prefix=BLOCKED

// The exact mode's prompt product over f32 rows interleaved 64 at a time
// (4 vectors of 16 lanes): the groups of rows on the threads; tiles of 6
// tokens, each with 6 x 4 accumulators from 0, then the reduction's 768
// steps (serial), each 6 x 4 fused multiply-adds of a broadcast activation
// and a vector of the weight (unrolled tile, lanes vectorized), and the
// accumulators stored as the output. A group's weights (192 KiB) stay in
// znver4's 1 MiB L2 while the token tiles stream them: the reduction is
// not blocked. The tokens after the last whole tile run one at a time,
// 4 vectors each, in the same loop over the groups.
// CHECK-LABEL: func.func @prefill
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: %[[ACC:[a-z0-9_]+]] = memref.alloca() {alignment = 64 : i64} : memref<6x4x16xf32>
// CHECK: tl.block "matmul_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c768{{.*}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c6{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "matmul_rf"
// CHECK: math.fma
// CHECK: tl.block "matmul" ({{.*}}) reads(%[[ACC]]{{.*}}) writes({{.*}}) {
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK: tl.block "matmul_tail_rf"
// CHECK: tl.block "matmul_tail"
//
// With an L2 of 64 KiB the group's weights would not stay: the reduction
// runs in blocks of 128 (32 KiB of weights, half of it) around the token
// tiles; per tile its 6 rows of the block's activations are staged side by
// side, the block's steps stay a loop, and the accumulators are added to
// the output (its 0 stored in the first block: the write-back's reduction
// variable is the block's offset).
// BLOCKED-LABEL: func.func @prefill
// BLOCKED: tl.for %[[G:[a-z0-9_]+]] = %{{.+}} to %c2{{.*}} kind(parallel)
// BLOCKED-NEXT: tl.for %[[KB:[a-z0-9_]+]] = %{{.+}} to %c6{{.*}} step %{{[a-z0-9_]+}} {
// BLOCKED-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// BLOCKED: memref.alloca() {alignment = 64 : i64} : memref<6x128xf32>
// BLOCKED: tl.block "matmul_rf_stage"
// BLOCKED: %[[ACC:[a-z0-9_]+]] = memref.alloca() {alignment = 64 : i64} : memref<6x4x16xf32>
// BLOCKED: tl.for %{{.+}} = %{{.+}} to %c128{{.*}} step %{{[a-z0-9_]+}} {
// BLOCKED: tl.block "matmul_rf"
// BLOCKED: %[[OFF:[0-9]+]] = arith.muli %[[KB]], %c128{{.*}} : index
// BLOCKED: tl.block "matmul" ({{.*}}, %{{[a-z0-9_]+}} = reduce %[[OFF]], {{.*}}) reads({{.*}}%[[ACC]]{{.*}}) writes({{.*}}) init {
// BLOCKED: arith.addf
func.func @prefill(%x: tensor<?x768xf32>, %w: !graph.weights) -> tensor<?x128xf32> {
  %p = graph.param %w["w"] {blob_offset = 0 : i64} : tensor<128x768xf32, #graph.interleaved<rows = 64, chunk = 4>>
  %0 = graph.matmul %x, %p : tensor<?x768xf32>, tensor<128x768xf32, #graph.interleaved<rows = 64, chunk = 4>> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

// Decode: the groups on the threads, one stream of the weight each: per
// element of the reduction 4 vectors of the weight, one broadcast, 4
// accumulators (one chain each), stored once after the reduction.
// CHECK-LABEL: func.func @decode
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} kind(parallel)
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<4x16xf32>
// CHECK: tl.for %{{.+}} = %{{.+}} to %c768{{.*}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for %{{.+}} = %{{.+}} to %c4{{.*}} kind(unrolled)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "matmul_rf"
// CHECK: math.fma
// CHECK: tl.block "matmul"
func.func @decode(%x: tensor<1x768xf32>, %w: !graph.weights) -> tensor<1x128xf32> attributes {llmc.phase = "decode"} {
  %p = graph.param %w["w"] {blob_offset = 0 : i64} : tensor<128x768xf32, #graph.interleaved<rows = 64, chunk = 4>>
  %0 = graph.matmul %x, %p : tensor<1x768xf32>, tensor<128x768xf32, #graph.interleaved<rows = 64, chunk = 4>> -> tensor<1x128xf32>
  return %0 : tensor<1x128xf32>
}

// -----

// AVX2 (16 vector registers, 8 lanes): rows interleaved 32 at a time, tiles
// of 3 tokens x 4 vectors.
// AVX2-LABEL: func.func @prefill_avx2
// AVX2: memref.alloca() {alignment = 64 : i64} : memref<3x4x8xf32>
// AVX2: tl.block "matmul_rf"
// AVX2: math.fma
func.func @prefill_avx2(%x: tensor<?x768xf32>, %w: !graph.weights) -> tensor<?x64xf32> {
  %p = graph.param %w["w"] {blob_offset = 0 : i64} : tensor<64x768xf32, #graph.interleaved<rows = 32, chunk = 4>>
  %0 = graph.matmul %x, %p : tensor<?x768xf32>, tensor<64x768xf32, #graph.interleaved<rows = 32, chunk = 4>> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
