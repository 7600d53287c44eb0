// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

!cache = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 2, head_dim = 16, element_type = f32>

// Prefill's p.V (a dot product over the context, of dynamic length, per
// output): register tiles of the GQA group's 2 heads x 4 outputs (the head
// dimension, split by 4; the group and those moved inside the context loop)
// share each step's load of the values (the group's) and of the
// probabilities (the 4 outputs'), each output with its own 16 lanes of
// partials (rows of a [2 x 4 x 16] buffer), its own tree, then the
// remaining positions in order: per output the order of the untiled dot
// product.
// CHECK-LABEL: func.func @prefill_pv
// CHECK: tl.block "attention_values_rf_init"
// CHECK-SAME: memref<2x4x16xf32>
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: arith.muli
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_values_rf"
// CHECK: tl.block "attention_values_tree0"
// CHECK: tl.block "attention_values_tree3"
// CHECK: tl.block "attention_values" (
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for {{.*}} to %c2{{.*}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for {{.*}} to %c4{{.*}} step %{{[a-z0-9_]+}} {
// CHECK: tl.block "attention_values_tail"
func.func @prefill_pv(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %c: !cache, %p: index) -> tensor<?x64xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !cache
  return %0 : tensor<?x64xf32>
}

!cachep = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 2, head_dim = 32, element_type = f32, values_by_position = true>

// Flash attention's p.V with the values by position (the exact mode on a
// CPU) adds each tile's products to the rescaled output: the head dimension
// in lanes (2 vectors, unrolled), the tile's positions serial around it. The
// outputs accumulate in registers, with FMAs (rfactor over no lanes: a
// [2 x 16] stack buffer from 0), and are added to the output once after the
// positions, where each position loaded, added and stored them.
// CHECK-LABEL: func.func @prefill_pv_by_position
// CHECK: %[[ACC:[a-z0-9_]+]] = memref.alloca() {{.*}} : memref<2x16xf32>
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK-NEXT: tl.block "attention_values_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_values_rf"
// CHECK: math.fma
// CHECK: affine.store %{{.+}}, %[[ACC]]
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_values" (
// CHECK-SAME: reads(%{{.+}}, %[[ACC]]
// CHECK: arith.addf
// CHECK: tl.block "softmax_inv"
func.func @prefill_pv_by_position(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %c: !cachep, %p: index) -> tensor<?x64xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 32 : i64, scale = 0.25 : f32, kv_tile = 16 : i64} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, !cachep
  return %0 : tensor<?x64xf32>
}

// With a GQA group (2 query heads per KV head) the group's loop moves inside
// the positions: one load of the values serves both heads, whose
// accumulators ([2 x 2 x 16]) are independent chains of FMAs.
// CHECK-LABEL: func.func @prefill_pv_by_position_gqa
// CHECK: %[[ACC:[a-z0-9_]+]] = memref.alloca() {{.*}} : memref<2x2x16xf32>
// CHECK: tl.block "attention_values_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_values_rf"
// CHECK: math.fma
// CHECK: tl.block "attention_values" (
// CHECK-SAME: reads(%{{.+}}, %[[ACC]]
func.func @prefill_pv_by_position_gqa(%q: tensor<?x128xf32>, %k: tensor<?x64xf32>, %c: !cachep, %p: index) -> tensor<?x128xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 32 : i64, scale = 0.25 : f32, kv_tile = 16 : i64} : tensor<?x128xf32>, tensor<?x64xf32>, tensor<?x64xf32>, !cachep
  return %0 : tensor<?x128xf32>
}

!cq = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 2, head_dim = 64, element_type = f32, values_by_position = true, keys_by_dim = true>

// A query tile of 4 rows (q_tile) and a GQA group of 2 heads: the 8 rows move
// inside the positions, each load of the values serving all of them; their 4
// vectors of the head dim each would take 32 registers, so 2 stay inside
// ([4 x 2 x 2 x 16]) and the head dim's halves go outside the positions.
// CHECK-LABEL: func.func @prefill_pv_q_tile_gqa
// CHECK: tl.block "attention_rescale"
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: %[[ACC:[a-z0-9_]+]] = memref.alloca() {{.*}} : memref<4x2x2x16xf32>
// CHECK: tl.block "attention_values_rf_init"
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_values_rf"
// CHECK: math.fma
func.func @prefill_pv_q_tile_gqa(%q: tensor<?x256xf32>, %k: tensor<?x128xf32>, %c: !cq, %p: index) -> tensor<?x256xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, scale = 0.25 : f32, kv_pad = 64 : i64, kv_tile = 128 : i64, q_tile = 4 : i64} : tensor<?x256xf32>, tensor<?x128xf32>, tensor<?x128xf32>, !cq
  return %0 : tensor<?x256xf32>
}

!cacheb = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 2, head_dim = 16, element_type = f32, values_block = 16>

// The values in blocks of 16 positions (graph-kv-layout, the two-pass
// softmax on a CPU) read contiguously within each block: the positions still
// go in lanes, in the same register tiles and order as @prefill_pv.
// CHECK-LABEL: func.func @prefill_pv_blocked
// CHECK: tl.block "attention_values_rf_init"
// CHECK-SAME: memref<2x4x16xf32>
// CHECK: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: arith.muli
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c4{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// CHECK: tl.block "attention_values_rf"
// CHECK-SAME: floordiv 16
// CHECK: tl.block "attention_values_tree0"
func.func @prefill_pv_blocked(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %c: !cacheb, %p: index) -> tensor<?x64xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !cacheb
  return %0 : tensor<?x64xf32>
}

// Decode's p.V in vec_dot's 64 lanes (the GQA group's 2 heads a register
// tile), over blocks of 16 positions: still in lanes (each step's 64
// positions span 4 blocks; the lowering loads them as 4 vectors).
// CHECK-LABEL: func.func @decode_pv_blocked
// CHECK: tl.block "attention_values_rf_init"
// CHECK-SAME: memref<2x64xf32>
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c64{{.*}} kind(vectorized)
// CHECK: tl.block "attention_values_rf"
func.func @decode_pv_blocked(%q: tensor<?x64xf32>, %k: tensor<?x32xf32>, %c: !cacheb, %p: index) -> tensor<?x64xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, !cacheb
  return %0 : tensor<?x64xf32>
}
