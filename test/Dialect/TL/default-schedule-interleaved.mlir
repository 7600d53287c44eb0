// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

// A Q4_0 product over rows interleaved 16 at a time (llama.cpp mode), one
// token: the row groups on the threads; per block the 16 rows' integer sums
// in lanes, each summing groups of four bytes (16 x 4: one 512-bit
// VPDPBUSD), the nibble loop unrolled (its shift a constant) and the loop
// over the groups of four serial around them; then
// the f32 steps with the 16 rows in lanes (each row's chain its own: no
// sum crosses lanes). The activations' sums of 32 (the nibbles' offset)
// are summed in 16 lanes and a tree.
// CHECK-LABEL: func.func @decode_interleaved
// CHECK: tl.block "act_sum_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "act_sum_rf"
// CHECK: tl.block "act_sum_tree0"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} {
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_iscale"
func.func @decode_interleaved(%x: tensor<1x256xf32>, %w: !graph.weights) -> tensor<1x32xf32> attributes {llmc.phase = "decode"} {
  %q4 = graph.param %w["q4"] {blob_offset = 0 : i64} : tensor<32x256x!graph.q4_0, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %q4 {act_type = !graph.q8_0} : tensor<1x256xf32>, tensor<32x256x!graph.q4_0, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<1x32xf32>
  return %0 : tensor<1x32xf32>
}

// -----

// The prompt: weights stationary, register tiles of 2 row groups x 4
// tokens inside the loop over blocks (unrolled), the same lanes inside;
// the tokens after the last whole tile follow one at a time.
// CHECK-LABEL: func.func @prefill_interleaved
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_iscale"
// CHECK: tl.block "matmul_idot_tail"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_iscale_tail"
func.func @prefill_interleaved(%x: tensor<?x256xf32>, %w: !graph.weights) -> tensor<?x64xf32> attributes {llmc.phase = "prefill"} {
  %q4 = graph.param %w["q4"] {blob_offset = 0 : i64} : tensor<64x256x!graph.q4_0, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %q4 {act_type = !graph.q8_0} : tensor<?x256xf32>, tensor<64x256x!graph.q4_0, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// Q4_K interleaved 16 rows at a time, a prompt: row groups outermost on the
// threads (weights stationary), then the tokens; per super-block the dots
// of the 8 sub-blocks with the 16 rows x groups of four in lanes (the
// sub-block loops unrolled: the dots stay in registers), the scaled sums
// and the mins with the rows in lanes, each row's two chains in lanes.
// CHECK-LABEL: func.func @prefill_q4_k
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_isum"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_imin"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_iscale"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_imin_scale"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_out"
func.func @prefill_q4_k(%x: tensor<?x256xf32>, %w: !graph.weights) -> tensor<?x32xf32> attributes {llmc.phase = "prefill"} {
  %k = graph.param %w["k"] {blob_offset = 0 : i64} : tensor<32x256x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %k {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<32x256x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// Q8_0 over rows interleaved 16 at a time, the prompt: the row groups on
// the threads and outermost (each group's weight bytes read from memory
// once), the tokens inside; each row's 8 lanes of vec_dot (i1) unrolled,
// the 16 rows in vector lanes: zeroed, one 512-bit VPDPBUSD (16 rows x 4
// bytes) per lane and block, the steps (their chains over the blocks), and
// hsum_float_8 of the lanes, all with the rows in lanes.
// CHECK-LABEL: func.func @prefill_q8_0
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %dim{{.*}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: memref.alloca() {{.*}} : memref<128xf32>
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_lanes_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} {
// CHECK: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_iscale"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_out"
func.func @prefill_q8_0(%x: tensor<?x64xf32>, %w: !graph.weights) -> tensor<?x32xf32> attributes {llmc.phase = "prefill"} {
  %q8 = graph.param %w["q8"] {blob_offset = 0 : i64} : tensor<32x64x!graph.q8_0, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %q8 {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<32x64x!graph.q8_0, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// Q6_K over rows interleaved 16 at a time, one token (the output head of
// the q4 models): the row groups on the threads; per super-block the runs
// that choose a bit field (qa: ql's nibble, qb with qa: qh's two bits) and
// the lanes (l1, l0a) unrolled, so every shift is a constant; the half (hf)
// serial; per run and lane the 16 rows x groups of four in vector lanes
// (one 512-bit VPDPBUSD), its scaled sum with the rows in lanes; the
// steps and hsum_float_8 with the rows in lanes.
// CHECK-LABEL: func.func @decode_q6_k
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: tl.block "matmul_lanes_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: memref.alloca() {{.*}} : memref<16xi32>
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_isum"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_iscale"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_out"
func.func @decode_q6_k(%x: tensor<1x256xf32>, %w: !graph.weights) -> tensor<1x32xf32> attributes {llmc.phase = "decode"} {
  %q6 = graph.param %w["q6"] {blob_offset = 0 : i64} : tensor<32x256x!graph.q6_k, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %q6 {act_type = !graph.q8_k} : tensor<1x256xf32>, tensor<32x256x!graph.q6_k, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<1x32xf32>
  return %0 : tensor<1x32xf32>
}
