// RUN: llm-opt %s -convert-graph-to-tl -split-input-file | FileCheck %s

// Params become views of the weight bytes at their blob offsets; the entry
// point gets the C interface.
// CHECK-LABEL: func.func @param
// CHECK-SAME: (%[[W:[a-z0-9_]+]]: memref<?xi8>) -> memref<4x8xf32> attributes {llvm.emit_c_interface}
// CHECK: %[[OFF:[a-z0-9_]+]] = arith.constant 256 : index
// CHECK: memref.view %[[W]][%[[OFF]]][] : memref<?xi8> to memref<4x8xf32>
func.func @param(%w: !graph.weights) -> tensor<4x8xf32> {
  %0 = graph.param %w["p"] {blob_offset = 256 : i64} : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// matmul: x[s, k] * w[n, k], a reduction over k with a zero init.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: memref<?x8xf32>, %[[W:[a-z0-9_]+]]: memref<4x8xf32>)
// CHECK: %[[OUT:[a-z0-9_]+]] = memref.alloc(%{{[a-z0-9_]+}}) {{.*}} : memref<?x4xf32>
// CHECK: tl.for %[[S:[a-z0-9_]+]] = {{.*}} kind(parallel)
// CHECK: tl.for %[[N:[a-z0-9_]+]] =
// CHECK: tl.for %[[K:[a-z0-9_]+]] =
// CHECK: tl.block "matmul" (%[[VS:[a-z0-9_]+]] = spatial %[[S]], %[[VN:[a-z0-9_]+]] = spatial %[[N]], %[[VK:[a-z0-9_]+]] = reduce %[[K]])
// CHECK-SAME: reads(%[[X]][%[[VS]], %[[VK]]] : memref<?x8xf32>, %[[W]][%[[VN]], %[[VK]]] : memref<4x8xf32>, %[[OUT]][%[[VS]], %[[VN]]] : memref<?x4xf32>)
// CHECK-SAME: writes(%[[OUT]][%[[VS]], %[[VN]]] : memref<?x4xf32>) init {
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: return %[[OUT]]
func.func @matmul(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// rms_norm: a sum-of-squares reduction per row, then the scaling.
// CHECK-LABEL: func.func @rms_norm
// CHECK: tl.block "rms_norm_sumsq" ({{.*}} = spatial {{.*}}, {{.*}} = reduce {{.*}})
// CHECK: tl.block "rms_norm_scale"
// CHECK: math.sqrt
func.func @rms_norm(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = graph.rms_norm %x, %g {eps = 1.0e-5 : f32} : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A bias broadcast over rows reads the bias at the trailing index only.
// CHECK-LABEL: func.func @add_bias
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: memref<?x8xf32>, %[[B:[a-z0-9_]+]]: memref<8xf32>)
// CHECK: tl.block "add" (%[[I:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[J:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}) reads(%[[X]][%[[I]], %[[J]]] : memref<?x8xf32>, %[[B]][%[[J]]] : memref<8xf32>)
func.func @add_bias(%x: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = graph.add %x, %b : tensor<?x8xf32>, tensor<8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Interleaved RoPE pairs (2i, 2i+1) of each head; half pairs (i, i + d/2).
// Block names are unique in a function: the second rope block is rope_1.
// CHECK-LABEL: func.func @rope
// CHECK: tl.block "rope" (%[[S:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[H:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}) reads(%{{[a-z0-9_]+}}[%[[S]], %[[H]] * 4 + %[[I]] * 2] : memref<?x8xf32>, %{{[a-z0-9_]+}}[%[[S]], %[[H]] * 4 + %[[I]] * 2 + 1] : memref<?x8xf32>)
// CHECK: math.powf
// CHECK: math.cos
// CHECK: math.sin
// CHECK: tl.block "rope_1" (%[[S2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[H2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}) reads(%{{[a-z0-9_]+}}[%[[S2]], %[[H2]] * 4 + %[[I2]]] : memref<?x8xf32>, %{{[a-z0-9_]+}}[%[[S2]], %[[H2]] * 4 + %[[I2]] + 2] : memref<?x8xf32>)
func.func @rope(%x: tensor<?x8xf32>, %p: index) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %0 = graph.rope %x, %p {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<interleaved>} : tensor<?x8xf32>
  %1 = graph.rope %x, %p {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
// Attention writes this call's keys/values into its layer of the cache, then
// reads query head h's KV head h floordiv 2 over the causal context.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: %[[CACHE:[a-z0-9]+]]: memref<2x2x16x2x4xf32>
// CHECK: tl.block "kv_store" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[P:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[KH:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[D:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: writes(%[[CACHE]][1, 0, %[[P]], %[[KH]], %[[D]]] : memref<2x2x16x2x4xf32>, %[[CACHE]][1, 1, %[[P]], %[[KH]], %[[D]]] : memref<2x2x16x2x4xf32>)
// CHECK: tl.block "attention_scores" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[H:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[T:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[D2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %[[CACHE]][1, 0, %[[T]], %[[H]] floordiv 2, %[[D2]]]
// CHECK: tl.block "softmax_max"
// CHECK: arith.maxnumf
// CHECK: tl.block "softmax_exp"
// CHECK: math.exp
// CHECK: tl.block "softmax_sum"
// CHECK: tl.block "attention_values"
// CHECK-SAME: %[[CACHE]][1, 1,
func.func @attention(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

// Reshapes are views, not copies.
// CHECK-LABEL: func.func @reshape
// CHECK-NOT: memref.alloc
// CHECK: memref.expand_shape %{{[a-z0-9_]+}} {{\[}}[0], [1, 2]] output_shape [%{{[a-z0-9_]+}}, 4, 4]
// CHECK: memref.collapse_shape %{{[a-z0-9_]+}} {{\[}}[0], [1, 2]]
func.func @reshape(%x: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %0 = graph.reshape %x : tensor<?x16xf32> -> tensor<?x4x4xf32>
  %1 = graph.reshape %0 : tensor<?x4x4xf32> -> tensor<?x16xf32>
  return %1 : tensor<?x16xf32>
}

// -----

// A Q8_0 weight stays as its blocks (34 bytes per 32 elements) and is
// dequantized inside the matmul: scale bytes, then the int8 value.
// CHECK-LABEL: func.func @matmul_q8_0
// CHECK-SAME: %[[W:[a-z0-9_]+]]: memref<4x68xi8>
// CHECK: tl.block "matmul" (%[[S:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[N:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[K:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %[[W]][%[[N]], (%[[K]] floordiv 32) * 34] : memref<4x68xi8>
// CHECK-SAME: %[[W]][%[[N]], (%[[K]] floordiv 32) * 34 + 1] : memref<4x68xi8>
// CHECK-SAME: %[[W]][%[[N]], (%[[K]] floordiv 32) * 34 + %[[K]] mod 32 + 2] : memref<4x68xi8>
// CHECK: arith.bitcast %{{[a-z0-9_]+}} : i16 to f16
// CHECK: arith.sitofp %{{[a-z0-9_]+}} : i8 to f32
func.func @matmul_q8_0(%x: tensor<?x64xf32>, %w: tensor<4x64x!graph.q8_0>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w : tensor<?x64xf32>, tensor<4x64x!graph.q8_0> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Q4_0: 18-byte blocks; byte k mod 16 after the scale holds two elements,
// selected by a shift of ((k mod 32) floordiv 16) * 4.
// CHECK-LABEL: func.func @matmul_q4_0
// CHECK-SAME: %[[W:[a-z0-9_]+]]: memref<4x36xi8>
// CHECK: tl.block "matmul" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[N:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[K:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %[[W]][%[[N]], (%[[K]] floordiv 32) * 18 + %[[K]] mod 16 + 2] : memref<4x36xi8>
// CHECK: arith.shrui
// CHECK: arith.andi
// CHECK: arith.subi
// CHECK: arith.sitofp %{{[a-z0-9_]+}} : i8 to f32
func.func @matmul_q4_0(%x: tensor<?x64xf32>, %w: tensor<4x64x!graph.q4_0>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w : tensor<?x64xf32>, tensor<4x64x!graph.q4_0> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Q6_K: 210-byte super-blocks of 256; d at byte 208, low bits in ql, high
// bits in qh (from byte 128), int8 sub-scales from byte 192.
// CHECK-LABEL: func.func @matmul_q6_k
// CHECK-SAME: %[[W:[a-z0-9_]+]]: memref<2x210xi8>
// CHECK: tl.block "matmul" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[N:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[K:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %[[W]][%[[N]], (%[[K]] floordiv 256) * 210 + 208] : memref<2x210xi8>
// CHECK-SAME: %[[W]][%[[N]], (%[[K]] floordiv 256) * 210 + 209] : memref<2x210xi8>
// CHECK: arith.shli
// CHECK: arith.subi
func.func @matmul_q6_k(%x: tensor<?x256xf32>, %w: tensor<2x256x!graph.q6_k>) -> tensor<?x2xf32> {
  %0 = graph.matmul %x, %w : tensor<?x256xf32>, tensor<2x256x!graph.q6_k> -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

// -----

// Q4_K: 144-byte super-blocks of 256: d, dmin, packed 6-bit scales and mins
// selected per 32-wide sub-block, 4-bit values from byte 16.
// CHECK-LABEL: func.func @matmul_q4_k
// CHECK-SAME: %[[W:[a-z0-9_]+]]: memref<2x144xi8>
// CHECK: tl.block "matmul" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[N:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[K:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %[[W]][%[[N]], (%[[K]] floordiv 256) * 144 + 2] : memref<2x144xi8>
// CHECK: arith.select
// CHECK: arith.subf
func.func @matmul_q4_k(%x: tensor<?x256xf32>, %w: tensor<2x256x!graph.q4_k>) -> tensor<?x2xf32> {
  %0 = graph.matmul %x, %w : tensor<?x256xf32>, tensor<2x256x!graph.q4_k> -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

// -----

// A quantized embedding table is gathered from its blocks: the row is the
// loaded token id, the scale sits at the start of the element's block.
// CHECK-LABEL: func.func @embedding_q8_0
// CHECK-SAME: %[[T:[a-z0-9_]+]]: memref<10x68xi8>
// CHECK: tl.block "embedding" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[J:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%[[T]][%[[R]], (%[[J]] floordiv 32) * 34] : memref<10x68xi8>
// CHECK: arith.sitofp
func.func @embedding_q8_0(%t: tensor<10x64x!graph.q8_0>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = graph.embedding %t[%ids] : tensor<10x64x!graph.q8_0>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// act_type f16: the activations are rounded to f16 and back once, before an
// ordinary f32 product.
// CHECK-LABEL: func.func @matmul_act_f16
// CHECK: tl.block "act_round"
// CHECK: arith.truncf %{{[a-z0-9_]+}} : f32 to f16
// CHECK: arith.extf %{{[a-z0-9_]+}} : f16 to f32
// CHECK: tl.block "matmul"
func.func @matmul_act_f16(%x: tensor<?x64xf32>, %w: tensor<4x64xf32>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w {act_type = f16} : tensor<?x64xf32>, tensor<4x64xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// act_type q8_0 with Q4_0 weights: per 32-block absmax, f16 scale and
// int8 values (round half to even). With 4 rows ggml does not repack the
// weight, so the product follows ggml_vec_dot_q4_0_q8_0: per block eight
// i32 lanes of four elements, lane_l = fma(d_w * d_a, isum_l, lane_l), and
// the lanes summed at the end.
// CHECK-LABEL: func.func @matmul_act_q8_0
// CHECK: tl.block "act_absmax" ({{.*}} = reduce
// CHECK: arith.maximumf
// CHECK: tl.block "act_scale"
// CHECK: arith.truncf %{{[a-z0-9_]+}} : f32 to f16
// CHECK: tl.block "act_quant"
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{[a-z0-9_]+}} : f32 to i8
// CHECK: tl.block "matmul_idot" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: memref<?x64xi8>
// CHECK-SAME: writes(%{{[a-z0-9_]+}}[0] : memref<1xi32>)
// CHECK: arith.muli %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : i32
// CHECK: tl.block "matmul_iscale" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}})
// CHECK: math.fma
// CHECK: tl.block "matmul_hsum"
func.func @matmul_act_q8_0(%x: tensor<?x64xf32>, %w: tensor<4x64x!graph.q4_0>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<4x64x!graph.q4_0> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// With a multiple of 8 rows ggml repacks Q4_0 (block_q4_0x8): one fused
// multiply-add per 32-block and output, no lanes.
// CHECK-LABEL: func.func @matmul_act_q8_0_repacked
// CHECK: tl.block "matmul_idot"
// CHECK: tl.block "matmul_iscale"
// CHECK: math.fma
// CHECK-NOT: matmul_hsum
// CHECK: return
func.func @matmul_act_q8_0_repacked(%x: tensor<?x64xf32>, %w: tensor<8x64x!graph.q4_0>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<8x64x!graph.q4_0> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// act_type q8_k with Q4_K weights: 256-blocks scaled by the signed value
// of largest magnitude (-127/max, clamped to 127); integer sums of
// scale * w * a and min * a per 64 elements, then FMA chains for the scaled
// sums and the mins (ggml's repacked Q4_K kernels), subtracted.
// CHECK-LABEL: func.func @matmul_act_q8_k
// CHECK: tl.block "act_absmax"
// CHECK: arith.select
// CHECK: tl.block "act_quant"
// CHECK: math.roundeven
// CHECK: arith.minimumf
// CHECK-NOT: act_sum
// CHECK: tl.block "matmul_idot"
// CHECK-SAME: writes(%{{[a-z0-9_]+}}[0] : memref<1xi32>, %{{[a-z0-9_]+}}[0] : memref<1xi32>)
// CHECK: tl.block "matmul_iscale"
// CHECK: math.fma
// CHECK: math.fma
// CHECK: arith.subf
func.func @matmul_act_q8_k(%x: tensor<?x256xf32>, %w: tensor<2x256x!graph.q4_k>) -> tensor<?x2xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<2x256x!graph.q4_k> -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

// -----

// act_type q8_k with Q6_K weights: ggml_vec_dot_q6_K_q8_K's lanes, the
// unsigned 6-bit values times their int8 scale, minus 32 * scale * (sums of
// 16 activations).
// CHECK-LABEL: func.func @matmul_act_q6_k
// CHECK: tl.block "act_sum"
// CHECK: tl.block "matmul_idot"
// CHECK: tl.block "matmul_iscale"
// CHECK: arith.shli
// CHECK: arith.subi
// CHECK: math.fma
// CHECK: tl.block "matmul_hsum"
func.func @matmul_act_q6_k(%x: tensor<?x256xf32>, %w: tensor<2x256x!graph.q6_k>) -> tensor<?x2xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<2x256x!graph.q6_k> -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

// -----

// f16 / bf16 weights stay 16-bit in memory and are widened (exactly) inside
// the product and the gather.
// CHECK-LABEL: func.func @matmul_f16_weight
// CHECK-SAME: memref<4x64xf16>
// CHECK: tl.block "matmul"
// CHECK: arith.extf %{{[a-z0-9_]+}} : f16 to f32
// CHECK: arith.mulf
func.func @matmul_f16_weight(%x: tensor<?x64xf32>, %w: tensor<4x64xf16>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w : tensor<?x64xf32>, tensor<4x64xf16> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @embedding_bf16
// CHECK: tl.block "embedding"
// CHECK: arith.extf %{{[a-z0-9_]+}} : bf16 to f32
func.func @embedding_bf16(%t: tensor<10x64xbf16>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = graph.embedding %t[%ids] : tensor<10x64xbf16>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// ggml_avx512: llama.cpp's CPU reductions. head_dim 68 = one 64-element
// step into 64 FMA lanes summed as ggml_vec_dot_f32 does, then the last 4
// products added in order (ggml's tail loop, not fused); softmax sums of whole 16-element chunks in f64 (positions
// past the causal end read as 0); p.V into 16 and 64 FMA lanes, the result
// picked by the number of rows (sgemm for several, vec_dot for one).
!cache68 = !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 1, head_dim = 68, element_type = f32>
// CHECK-LABEL: func.func @attention_ggml
// CHECK: tl.block "attention_qk_lanes" ({{.*}} = reduce {{.*}} = spatial
// CHECK: math.fma
// CHECK: tl.block "attention_qk_sum"
// CHECK: tl.block "attention_qk_rest" ({{.*}} = reduce
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tl.block "softmax_exp"
// CHECK-NOT: math.exp
// CHECK: tl.block "softmax_sum"
// CHECK: arith.select
// CHECK: arith.extf %{{[a-z0-9_]+}} : f32 to f64
// CHECK: tl.block "attention_pv_zero"
// CHECK: tl.block "attention_pv_lanes"
// CHECK-SAME: memref<64xf32>, %{{[a-z0-9_]+}}[%{{[a-z0-9_]+}} mod 16] : memref<16xf32>)
// CHECK: tl.block "attention_pv_sum"
func.func @attention_ggml(%q: tensor<?x68xf32>, %c: !cache68, %p: index) -> tensor<?x68xf32> {
  %0 = graph.attention %q, %q, %q, %c, %p {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 68 : i64, scale = 0.125 : f32, ggml_avx512} : tensor<?x68xf32>, tensor<?x68xf32>, tensor<?x68xf32>, !cache68
  return %0 : tensor<?x68xf32>
}

// -----

// ggml_avx512 SiLU: ggml_v_expf's polynomial (fused multiply-adds), no
// libm exp. RoPE: the angle multiplied up pair by pair (an scf.for over the
// pair index), rotations as fused multiply-adds.
// CHECK-LABEL: func.func @silu_rope_ggml
// CHECK: tl.block "silu"
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK: tl.block "rope"
// CHECK: scf.for
// CHECK: math.fma
func.func @silu_rope_ggml(%x: tensor<?x8xf32>, %p: index) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %0 = graph.silu %x {ggml_avx512} : tensor<?x8xf32>
  %1 = graph.rope %x, %p {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>, ggml_avx512} : tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// ggml_avx512 with bf16 weights and activations: VDPBF16PS lanes (odd
// element of each pair first), for several rows (sgemm) and for one
// (vec_dot_bf16), the result picked by the row count.
// CHECK-LABEL: func.func @matmul_bf16_ggml
// CHECK: tl.block "act_round"
// CHECK: tl.block "matmul_bf16_gemm"
// CHECK: tl.block "matmul_bf16_dot"
// CHECK: tl.block "matmul_bf16_sum"
// CHECK: arith.select
func.func @matmul_bf16_ggml(%x: tensor<?x64xf32>, %w: tensor<4x64xbf16>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w {act_type = bf16, ggml_avx512} : tensor<?x64xf32>, tensor<4x64xbf16> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_f16_ggml
// CHECK: tl.block "matmul_f16_gemm"
// CHECK: tl.block "matmul_f16_dot"
// CHECK: tl.block "matmul_f16_sum"
func.func @matmul_f16_ggml(%x: tensor<?x64xf32>, %w: tensor<4x64xf16>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w {act_type = f16, ggml_avx512} : tensor<?x64xf32>, tensor<4x64xf16> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
