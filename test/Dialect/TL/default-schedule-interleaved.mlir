// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:x86-64-v3" | FileCheck %s --check-prefix=AVX2

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
// The weights' unpacking is hoisted out of the tokens' loop, once per row
// group into a stack buffer each (the f16 scales, the 6-bit scales and
// mins, the nibbles, over the loops each uses): the products then load
// unpacked bytes, no shift or mask per token. The mins, which the products
// take in f32, are hoisted converted (f32 lanes, no widening or conversion
// per token).
// CHECK-LABEL: func.func @prefill_q4_k
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} kind(parallel)
// CHECK: tl.block "matmul_imin_scale_hoist"
// CHECK: tl.block "matmul_iscale_hoist"
// CHECK: %[[MINS:.+]] = memref.alloca() {{.*}} : memref<128xf32>
// CHECK: tl.block "matmul_imin_hoist"{{.*}} writes(%[[MINS]][
// CHECK: %[[SCALES:.+]] = memref.alloca() {{.*}} : memref<128xi8>
// CHECK: tl.block "matmul_isum_hoist"{{.*}} writes(%[[SCALES]][
// CHECK: %[[NIBBLES:.+]] = memref.alloca() {{.*}} : memref<4096xi8>
// CHECK: tl.for {{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.for {{.*}} to %c4{{.*}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot_hoist"{{.*}} writes(%[[NIBBLES]][
// CHECK: arith.shrui
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot"{{.*}}%[[NIBBLES]][
// CHECK-NOT: arith.shrui
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_isum"{{.*}}%[[SCALES]][
// CHECK-NOT: arith.shrui
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_imin"{{.*}}%[[MINS]][
// CHECK-NOT: arith.shrui
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
// once), the tokens inside in tiles of 3 (each token's 8 lanes of vec_dot
// x 16 rows are 8 of the 32 registers; 3 tokens leave a quarter for the
// rest): the lanes expanded to one buffer per tile, a token's slice its
// index mod 3, zeroed per token; per block the integer sums expanded too,
// and per lane of vec_dot (i1) the tile's tokens (t1) innermost, so one
// load of the weight's 16 rows x 4 bytes serves 3 tokens: one 512-bit
// VPDPBUSD and its step (each row's chain over the blocks) per token, with
// the rows in lanes; then hsum_float_8 per token. The tokens after the last
// whole tile one at a time, as before.
// With 16 vector registers (AVX2) the 8 registers of one token's lanes
// leave no room for a second token: no tile.
// AVX2-LABEL: func.func @prefill_q8_0
// AVX2: memref.alloca() {{.*}} : memref<128xf32>
// AVX2-NOT: mod
// AVX2: return
// CHECK-LABEL: func.func @prefill_q8_0
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: arith.constant 3
// CHECK: tl.for %[[T0:.+]] = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK: %[[LANES:.+]] = memref.alloca() {{.*}} : memref<3x128xf32>
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c3{{.*}} kind(unrolled)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_lanes_init" (%[[T:[a-z0-9]+]] = spatial {{.*}} writes(%[[LANES]][%[[T]] mod 3, {{.*}}]
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: %[[ISUM:.+]] = memref.alloca() {{.*}} : memref<3x128xi32>
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c3{{.*}} kind(unrolled)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot" (%[[U:[a-z0-9]+]] = spatial {{.*}} writes(%[[ISUM]][%[[U]] mod 3, {{.*}}]
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_iscale" (%[[V:[a-z0-9]+]] = spatial {{.*}} writes(%[[LANES]][%[[V]] mod 3, {{.*}}]
// CHECK: tl.for %{{.+}} = %{{.+}} to %c3{{.*}} kind(unrolled)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_out"
// CHECK: memref.alloca() {{.*}} : memref<128xf32>
// CHECK: tl.block "matmul_idot_tail"
// CHECK: tl.block "matmul_iscale_tail"
// CHECK: tl.block "matmul_out_tail"
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

// -----

// Q6_K over rows interleaved 16 at a time, a prompt of 4 super-blocks per
// row. The integer sums of vec_dot's 8 lanes (l1, l0a) x 16 rows are summed
// over runs (hf, qa, qb) around the lanes; the lanes go outermost in the
// block (integer sums in another order: exact) and fuse with the scale's
// loop over the lanes, so each lane's sums live for its runs only. Then
// the token tile as for Q8_0 (3 tokens), moved inside the runs: one
// unpacking of the 6-bit weights (a constant shift per run) serves 3
// tokens. The activations' Q8_K signed maximum comes from two reductions
// in 16 lanes and a tree each (a max of the magnitudes, a min of the first
// one's key), not from a weight's tile.
// AVX2 (16 registers): no tile, and the runs stay around the lanes (the
// lanes move only for a tile): the half's loop first.
// AVX2-LABEL: func.func @prefill_q6_k
// AVX2: memref.alloca() {{.*}} : memref<128xi32>
// AVX2-NEXT: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} {
// AVX2-NOT: mod
// AVX2: return
// CHECK-LABEL: func.func @prefill_q6_k
// CHECK: tl.block "act_absmax_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "act_absmax_rf"
// CHECK: tl.block "act_absmax_tree3"
// CHECK: tl.block "act_first_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "act_first_rf"
// CHECK: tl.block "act_first_tree3"
// CHECK: tl.block "act_signed_max"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: memref.alloca() {{.*}} : memref<3x128xf32>
// CHECK: tl.block "matmul_lanes_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: memref.alloca() {{.*}} : memref<3x128xi32>
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(unrolled)
// CHECK-NEXT: memref.alloca() {{.*}} : memref<3x16xi32>
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c3{{.*}} kind(unrolled)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_idot"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_isum"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c3{{.*}} kind(unrolled)
// CHECK: tl.for %{{.+}} = %{{.+}} to %c16 step %{{[a-z0-9_]+}} kind(vectorized)
// CHECK-NEXT: tl.block "matmul_iscale"
// CHECK: tl.block "matmul_out"
// CHECK: tl.block "matmul_idot_tail"
func.func @prefill_q6_k(%x: tensor<?x1024xf32>, %w: !graph.weights) -> tensor<?x32xf32> attributes {llmc.phase = "prefill"} {
  %q6 = graph.param %w["q6"] {blob_offset = 0 : i64} : tensor<32x1024x!graph.q6_k, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %q6 {act_type = !graph.q8_k} : tensor<?x1024xf32>, tensor<32x1024x!graph.q6_k, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}
