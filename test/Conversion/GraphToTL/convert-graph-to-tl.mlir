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

// matmul: x[s, k] * w[n, k], a reduction over k with a zero init, in a
// canonical nest: every loop serial, the order a schedule's choice.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: memref<?x8xf32>, %[[W:[a-z0-9_]+]]: memref<4x8xf32>)
// CHECK: %[[OUT:[a-z0-9_]+]] = memref.alloc(%{{[a-z0-9_]+}}) {{.*}} : memref<?x4xf32>
// CHECK-NOT: kind(
// CHECK: tl.for %[[S:[a-z0-9_]+]] =
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

// RoPE: the angles of each (row, pair) once into cos/sin tables (shared by
// the heads; direct angles pos * theta^(-2i/d)), then the rotation of the
// pairs: interleaved (2i, 2i+1) of each head, or half (i, i + d/2). Block
// names are unique in a function: the second ones are *_1. llama.cpp's
// iterated angles multiply up pair by pair (ggml's rope cache), and rotate
// with fused multiply-adds as ggml's build does.
// CHECK-LABEL: func.func @rope
// CHECK: tl.block "rope_angles" (%{{.*}}) reads() writes(%[[COS:[a-z0-9_]+]][{{.*}}] : memref<?x2xf32>, %[[SIN:[a-z0-9_]+]][{{.*}}] : memref<?x2xf32>)
// CHECK: math.powf
// CHECK: math.cos
// CHECK: math.sin
// CHECK: tl.block "rope" (%[[S:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[H:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}) reads(%{{[a-z0-9_]+}}[%[[S]], %[[H]] * 4 + %[[I]] * 2] : memref<?x8xf32>, %{{[a-z0-9_]+}}[%[[S]], %[[H]] * 4 + %[[I]] * 2 + 1] : memref<?x8xf32>, %[[COS]][%[[S]], %[[I]]] : memref<?x2xf32>, %[[SIN]][%[[S]], %[[I]]] : memref<?x2xf32>)
// CHECK: tl.block "rope_angles_1"
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK: tl.block "rope_1" (%[[S2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[H2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}) reads(%{{[a-z0-9_]+}}[%[[S2]], %[[H2]] * 4 + %[[I2]]] : memref<?x8xf32>, %{{[a-z0-9_]+}}[%[[S2]], %[[H2]] * 4 + %[[I2]] + 2] : memref<?x8xf32>
// CHECK: math.fma
func.func @rope(%x: tensor<?x8xf32>, %p: index) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %0 = graph.rope %x, %p {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<interleaved>} : tensor<?x8xf32>
  %1 = graph.rope %x, %p {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>, angles = #graph.rope_angles<iterated>} : tensor<?x8xf32>
  return %0, %1 : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// RoPE with a head norm (graph-fuse-rope-norm): each head's squares summed in
// f64 first (a reduction over the head's elements into [rows, heads]), then
// the rotation loads the pair's two elements and normalises them as the
// rms_norm scale block does, with the gain of each one's place in the head
// (half style: i and i + 2). No normalised buffer, no scale nest.
// CHECK-LABEL: func.func @rope_norm
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: memref<?x8xf32>, %{{.+}}: index, %[[G:[a-z0-9_]+]]: memref<4xf32>)
// CHECK: %[[SS:.+]] = memref.alloc(%{{.+}}) {{.*}} : memref<?x2xf64>
// CHECK: tl.block "rope_norm_sumsq" (%[[S0:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[H0:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[D0:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}) reads(%[[X]][%[[S0]], %[[H0]] * 4 + %[[D0]]] : memref<?x8xf32>, %[[SS]][%[[S0]], %[[H0]]] : memref<?x2xf64>) writes(%[[SS]][%[[S0]], %[[H0]]] : memref<?x2xf64>) init
// CHECK: tl.block "rope" (%[[S:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[H:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}) reads({{.*}}, %[[SS]][%[[S]], %[[H]]] : memref<?x2xf64>, %[[G]][%[[I]]] : memref<4xf32>, %[[G]][%[[I]] + 2] : memref<4xf32>)
// CHECK: math.sqrt
// CHECK-NOT: tl.block
// CHECK: return
func.func @rope_norm(%x: tensor<?x8xf32>, %p: index, %g: tensor<4xf32>) -> tensor<?x8xf32> {
  %0 = graph.rope %x, %p norm(%g : tensor<4xf32>) {head_dim = 4 : i64, norm_eps = 1.0e-6 : f32, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
// Attention writes this call's keys and values (a nest each) into its layer
// of the cache, a slice of it that every layer's nests index alike
// (llmc/abi.h: per KV head, keys as [position][dim], values transposed as
// [dim][position]), then reads query head h's KV head h floordiv 2 over the
// causal context: q.k, the max, the exponentials, their sum in f64, the
// probabilities scaled by the f32 rounding of 1 / sum, and p.V along V's
// rows.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: %[[ALL:[a-z0-9]+]]: memref<2x2x2x64xf32>
// CHECK: %[[CACHE:.+]] = memref.subview %[[ALL]][1, 0, 0, 0] [1, 2, 2, 64] [1, 1, 1, 1] : memref<2x2x2x64xf32> to memref<2x2x64xf32, strided<[128, 64, 1], offset: 256>>
// CHECK: %[[SC:.+]] = memref.alloc(%{{.+}}) {{.*}} : memref<4x?xf32>
// CHECK: tl.block "kv_store" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[P:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[KH:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[D:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: writes(%[[CACHE]][0, %[[KH]], %[[P]] * 4 + %[[D]]] : memref<2x2x64xf32, strided<[128, 64, 1], offset: 256>>)
// CHECK: tl.block "kv_store_v" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[VP:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[VKH:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[VD:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: writes(%[[CACHE]][1, %[[VKH]], %[[VD]] * 16 + %[[VP]]] : memref<2x2x64xf32, strided<[128, 64, 1], offset: 256>>)
// Then one nest over the rows (token, KV head): each iteration computes the
// rows of the KV head's group of query heads (h = kv * 2 + g), each block
// looping over the group itself, through a scores row per head (%SC; no
// [tokens, heads, context] buffer).
// CHECK: tl.for %[[S:[a-z0-9_]+]] = %{{.+}} to %{{.+}} step
// CHECK: tl.for %[[KV:[a-z0-9_]+]] = %{{.+}} to %c2
// CHECK: tl.for %[[G:[a-z0-9_]+]] = %{{.+}} to %c2
// CHECK-NOT: tl.for %{{.+}} = %{{.+}} to %dim
// CHECK: tl.block "attention_scores" (%{{[a-z0-9_]+}} = spatial %[[S]], %[[K1:[a-z0-9_]+]] = spatial %[[KV]], %[[G1:[a-z0-9_]+]] = spatial %[[G]], %[[T:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[D2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %[[CACHE]][0, %[[K1]], %[[T]] * 4 + %[[D2]]]
// CHECK-SAME: writes(%[[SC]][%[[K1]] * 2 + %[[G1]], %[[T]]] : memref<4x?xf32>)
// CHECK: tl.block "softmax_max"
// CHECK: arith.maxnumf
// CHECK: tl.block "softmax_exp"
// CHECK: math.exp
// CHECK-NOT: softmax_pad
// CHECK: tl.block "softmax_sum"
// CHECK: arith.extf %{{[a-z0-9_]+}} : f32 to f64
// CHECK: tl.block "softmax_inv" (%{{.+}} = spatial %[[S]], %{{.+}} = spatial %[[KV]], %{{.+}} = spatial %{{.+}})
// CHECK: arith.truncf %{{[a-z0-9_]+}} : f64 to f32
// CHECK: tl.block "softmax_scale"
// p.V's loops (g, d, t): t the reduction, d the output.
// CHECK: tl.for %[[VG:[a-z0-9_]+]] = %{{.+}} to %c2
// CHECK: tl.for %[[VD:[a-z0-9_]+]] = %{{.+}} to %c4
// CHECK: tl.for %[[VT:[a-z0-9_]+]] = %{{.+}} to %{{.+}}
// CHECK-NEXT: tl.block "attention_values" (%{{[a-z0-9_]+}} = spatial %[[S]], %[[K3:[a-z0-9_]+]] = spatial %[[KV]], %[[G3:[a-z0-9_]+]] = spatial %[[VG]], %[[T3:[a-z0-9_]+]] = reduce %[[VT]], %[[D3:[a-z0-9_]+]] = spatial %[[VD]])
// CHECK-SAME: reads(%[[SC]][%[[K3]] * 2 + %[[G3]], %[[T3]]] : memref<4x?xf32>, %[[CACHE]][1, %[[K3]], %[[D3]] * 16 + %[[T3]]]
// CHECK-NOT: tl.block
// CHECK: return
func.func @attention(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

// llama.cpp's numerics: the probabilities over the context rounded up to
// kv_pad (at most max_seq), zero past each row's causal end; p.V over each
// row's causal end rounded up to kv_pad (at most that context: the rest adds
// only zeros); the exponentials summed in f32 runs of softmax_block, the
// runs in f64.
!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
// CHECK-LABEL: func.func @attention_padded
// CHECK: %[[UP:.+]] = arith.muli %{{.+}}, %c8
// CHECK: %[[CTXP:.+]] = arith.minui %[[UP]], %c16
// CHECK: tl.for %[[S:.+]] = %{{.+}} to %{{.+}} step
// CHECK: %[[END:.+]] = arith.addi %{{.+}}, %c1
// CHECK: %[[RUP:.+]] = arith.muli %{{.+}}, %c8
// CHECK: %[[ROW:.+]] = arith.minui %[[RUP]], %[[CTXP]]
// CHECK: tl.block "softmax_exp"
// CHECK: tl.block "softmax_pad"
// CHECK: tl.block "softmax_sum_run" ({{.*}} = reduce %{{.+}}) reads(%{{.+}}[%{{.+}} * 2 + %{{.+}}, %{{.+}} * 4 + %{{.+}}] : memref<4x?xf32>
// CHECK: tl.block "softmax_sum" ({{.*}}) reads(%{{.+}} : memref<4x?xf32>, {{.*}} : memref<?x4xf64>)
// CHECK: tl.for %{{.+}} = %{{.+}} to %[[ROW]]
// CHECK-NEXT: tl.block "attention_values"
func.func @attention_padded(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 8 : i64, softmax_block = 4 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

// An f16 cache: keys and values rounded to f16 where they are stored, widened
// where the products read them. With round_to_cache (llama.cpp mode) q is
// rounded to f16 once, first, and the probabilities where they are scaled.
!cache16 = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f16>
// CHECK-LABEL: func.func @attention_f16_cache
// CHECK-SAME: memref<2x2x2x64xf16>
// CHECK-NOT: attention_q_round
// CHECK: tl.block "kv_store"
// CHECK: %[[K:.+]] = affine.load
// CHECK: %[[K16:.+]] = arith.truncf %[[K]] : f32 to f16
// CHECK: affine.store %[[K16]]
// CHECK: tl.block "attention_scores"
// CHECK: %[[Q:.+]] = affine.load %{{.+}} : memref<?x16xf32>
// CHECK: %[[KC:.+]] = affine.load %{{.+}} : memref<2x2x64xf16, {{.+}}>
// CHECK: %[[KW:.+]] = arith.extf %[[KC]] : f16 to f32
// CHECK: arith.mulf %[[Q]], %[[KW]] : f32
// CHECK: tl.block "softmax_scale"
// CHECK-NOT: truncf
// CHECK: tl.block "attention_values"
// CHECK: arith.extf %{{.+}} : f16 to f32
func.func @attention_f16_cache(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache16, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache16
  return %0 : tensor<?x16xf32>
}

// -----

!cache16 = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f16>
// CHECK-LABEL: func.func @attention_f16_cache_rounded
// CHECK: tl.block "attention_q_round"
// CHECK: %[[QR:.+]] = arith.truncf %{{.+}} : f32 to f16
// CHECK: arith.extf %[[QR]] : f16 to f32
// CHECK: tl.block "attention_scores"
// CHECK: tl.block "softmax_scale"
// CHECK: %[[PR:.+]] = arith.truncf %{{.+}} : f32 to f16
// CHECK: arith.extf %[[PR]] : f16 to f32
// CHECK: tl.block "attention_values"
func.func @attention_f16_cache_rounded(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache16, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, round_to_cache = true} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache16
  return %0 : tensor<?x16xf32>
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
// kv_tile: flash attention. The scores of one tile of 8 positions per head
// (a static [heads, 8] buffer, no row over the context); per row its max
// (-inf), sum (f64, 0) and output (0) set before a loop over the tiles that
// cover the causal context; per tile q.k, the tile's max, the factor
// exp(old max - new max), the exponentials, their f32 sum, sum = sum *
// factor + the tile's, out *= factor, then p.V adding to out (no init);
// after the tiles out *= f32(1 / sum). The tiles' loop steps by 8 up to the
// row's causal end (a cost model sees its work: the tiles' extents add up to
// the context).
// CHECK-LABEL: func.func @attention_online
// CHECK: %[[SC:.+]] = memref.alloc() {{.*}} : memref<1x4x8xf32>
// CHECK-NOT: memref<4x?xf32>
// CHECK: %[[END:.+]] = arith.addi %{{.+}}, %c1{{.*}} : index
// CHECK: tl.block "attention_init"
// CHECK: tl.block "attention_init_out"
// CHECK: tl.for %[[T0:.+]] = %{{.+}} to %[[END]] step %c8
// CHECK: tl.block "attention_scores" ({{.*}}%[[T1:[a-z0-9_]+]] = spatial %[[T0]], %[[X1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[Y1:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %subview[0, %{{[a-z0-9_]+}}, (%[[T1]] + %[[X1]]) * 4 + %[[Y1]]]
// CHECK-SAME: writes(%[[SC]][{{.+}}, {{.+}}, %[[X1]]] : memref<1x4x8xf32>)
// CHECK: tl.block "softmax_max"
// CHECK: tl.block "softmax_rescale_max"
// CHECK: %[[OLD:.+]] = affine.load
// CHECK: %[[NEW:.+]] = arith.maxnumf %[[OLD]],
// CHECK: %[[D:.+]] = arith.subf %[[OLD]], %[[NEW]]
// CHECK: math.exp %[[D]]
// CHECK: tl.block "softmax_exp"
// CHECK: tl.block "softmax_pad"
// CHECK: tl.block "softmax_sum"
// CHECK: tl.block "softmax_rescale_sum"
// CHECK: arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK: arith.addf %{{.+}}, %{{.+}} : f64
// CHECK: tl.block "attention_rescale"
// CHECK: tl.block "attention_values" ({{.*}}%[[T2:[a-z0-9_]+]] = spatial %[[T0]], %[[X2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[D2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: %subview[1, %{{[a-z0-9_]+}}, %[[D2]] * 16 + %[[T2]] + %[[X2]]]
// CHECK-NOT: init
// CHECK: tl.block "softmax_inv"
// CHECK: tl.block "attention_normalize"
// CHECK-NOT: tl.block
// CHECK: return
func.func @attention_online(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 4 : i64, kv_tile = 8 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

// Values by position (graph-kv-layout): stored as the keys are, at
// position * head_dim + dim, one row per step; p.V's loops follow the cache,
// the positions (the reduction) outside the head dim: (g, x, d).
!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32, values_by_position = true>
// CHECK-LABEL: func.func @attention_values_by_position
// CHECK: tl.block "kv_store_v" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[VP:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[VKH:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[VD:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: writes(%subview[1, %[[VKH]], %[[VP]] * 4 + %[[VD]]]
// CHECK: tl.for %[[T0:.+]] = %{{.+}} step %c8
// CHECK: tl.block "attention_rescale"
// CHECK: tl.for %[[G:[a-z0-9_]+]] =
// CHECK: tl.for %[[X:[a-z0-9_]+]] =
// CHECK: tl.for %[[D:[a-z0-9_]+]] =
// CHECK-NEXT: tl.block "attention_values" ({{.*}}%[[T2:[a-z0-9_]+]] = spatial %[[T0]], %[[X2:[a-z0-9_]+]] = reduce %[[X]], %[[D2:[a-z0-9_]+]] = spatial %[[D]])
// CHECK-SAME: %subview[1, %{{[a-z0-9_]+}}, (%[[T2]] + %[[X2]]) * 4 + %[[D2]]]
func.func @attention_values_by_position(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 4 : i64, kv_tile = 8 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

// Keys by dim (graph-kv-layout, beside values by position): stored
// transposed, at dim * max_seq + position, a step's keys one element per row;
// q.k reads them so (the positions contiguous), over the tile's positions
// rounded up to a multiple of 64, at most the tile and the cache's end
// (max_seq - the tile's first position).
!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32, values_by_position = true, keys_by_dim = true>
// CHECK-LABEL: func.func @attention_keys_by_dim
// CHECK: tl.block "kv_store" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[KP:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[KKH:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[KD:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: writes(%subview[0, %[[KKH]], %[[KD]] * 16 + %[[KP]]]
// CHECK: tl.for %[[T0:.+]] = %{{.+}} step %c8
// CHECK: %[[N:.+]] = arith.minui %{{.+}}, %c8
// CHECK: %[[UP:.+]] = arith.addi %[[N]], %c63
// CHECK: %[[Q:.+]] = arith.divui %[[UP]], %c64
// CHECK: %[[R:.+]] = arith.muli %[[Q]], %c64
// CHECK: %[[RT:.+]] = arith.minui %[[R]], %c8{{[_0-9]*}}
// CHECK: %[[LEFT:.+]] = arith.subi %c16{{[_0-9]*}}, %[[T0]]
// CHECK: %[[NQK:.+]] = arith.minui %[[RT]], %[[LEFT]]
// CHECK: tl.for %{{[a-z0-9_]+}} = %c0{{[_0-9]*}} to %[[NQK]]
// CHECK: tl.block "attention_scores" ({{.*}}%[[T1:[a-z0-9_]+]] = spatial %[[T0]], %[[X1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[Y1:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %subview[0, %{{[a-z0-9_]+}}, %[[Y1]] * 16 + %[[T1]] + %[[X1]]]
func.func @attention_keys_by_dim(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_tile = 8 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

// q_tile (graph-query-tiles): the prompt's whole tiles of 2 rows, each tile's
// nest of a KV head over its rows: the tiles of positions up to the causal
// end of its last row, a scores tile per row (row s's at s mod 2), q.k over
// all of a tile's positions for both rows, each row's max, exponentials and
// sum over its own causal positions (its count clamped at 0 and the tile's),
// zeros after them; then the tokens after the last whole tile a row at a time.
!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32, values_by_position = true, keys_by_dim = true>
// CHECK-LABEL: func.func @attention_q_tile
// CHECK: %[[SC:.+]] = memref.alloc() {{.*}} : memref<2x4x8xf32>
// CHECK: %[[NT:.+]] = arith.divui %dim, %c2
// CHECK: tl.for %[[IT:[a-z0-9_]+]] = %{{.+}} to %[[NT]]
// CHECK: %[[S0:.+]] = arith.muli %[[IT]], %c2
// CHECK: tl.for %[[KV:[a-z0-9_]+]] =
// CHECK: %[[PS:.+]] = arith.addi %arg3, %[[S0]]
// CHECK: %[[TEND:.+]] = arith.addi %[[PS]], %c2
// CHECK: tl.block "attention_init"
// CHECK: tl.for %[[T0:[a-z0-9_]+]] = %{{.+}} to %[[TEND]] step %c8
// CHECK: tl.for %[[R:[a-z0-9_]+]] = %{{.+}} to %c2
// CHECK: %[[S:.+]] = arith.addi %[[S0]], %[[R]]
// CHECK: tl.block "attention_scores" (%[[VS:[a-z0-9_]+]] = spatial %[[S]],
// CHECK-SAME: writes(%[[SC]][%{{[a-z0-9_]+}} + %[[VS]] mod 2,
// CHECK: tl.for %{{.+}} = %{{.+}} to %c2
// CHECK: %[[LEFT:.+]] = arith.subi %{{.+}}, %[[T0]]
// CHECK: %[[POS:.+]] = arith.maxsi %[[LEFT]], %c0
// CHECK: %[[ROW:.+]] = arith.minui %[[POS]],
// CHECK: tl.for %{{.+}} = %{{.+}} to %[[ROW]]
// CHECK-NEXT: tl.block "softmax_max"
// CHECK: tl.block "softmax_pad"
// CHECK: tl.block "attention_values"
// CHECK: tl.block "attention_normalize"
// CHECK: %[[TILED:.+]] = arith.muli %[[NT]], %c2
// CHECK: %[[REST:.+]] = arith.subi %dim, %[[TILED]]
// CHECK: tl.for %{{.+}} = %{{.+}} to %[[REST]]
// CHECK: tl.block "attention_scores_1"
func.func @attention_q_tile(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 4 : i64, kv_tile = 8 : i64, q_tile = 2 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

// q_tile with the two-pass softmax (llama.cpp's mode): a scores row per row
// of the query tile (row s's at s mod 2), q.k up to the causal end of the
// tile's last row for both rows, each row's max, exponentials, sum and
// scaling up to its own causal end (pos0 + s + 1), zeros from there to the
// row's width, p.V up to the tile's end rounded up to kv_pad.
!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
// CHECK-LABEL: func.func @attention_two_pass_q_tile
// CHECK: %[[SC:.+]] = memref.alloc(%{{.+}}) {{.*}} : memref<2x4x?xf32>
// CHECK: %[[NT:.+]] = arith.divui %dim, %c2
// CHECK: tl.for %[[IT:[a-z0-9_]+]] = %{{.+}} to %[[NT]]
// CHECK: %[[S0:.+]] = arith.muli %[[IT]], %c2
// CHECK: %[[PS:.+]] = arith.addi %arg3, %[[S0]]
// CHECK: %[[TEND:.+]] = arith.addi %[[PS]], %c2
// CHECK: tl.for %[[R:[a-z0-9_]+]] = %{{.+}} to %c2
// CHECK-NEXT: %[[S:.+]] = arith.addi %[[S0]], %[[R]]
// CHECK: tl.for %{{[a-z0-9_]+}} = %{{.+}} to %[[TEND]]
// CHECK: tl.block "attention_scores" (%[[VS:[a-z0-9_]+]] = spatial %[[S]],
// CHECK-SAME: writes(%[[SC]][%[[VS]] mod 2,
// CHECK: tl.for %[[R2:[a-z0-9_]+]] = %{{.+}} to %c2
// CHECK-NEXT: %[[S2:.+]] = arith.addi %[[S0]], %[[R2]]
// CHECK-NEXT: %[[PS2:.+]] = arith.addi %arg3, %[[S2]]
// CHECK: %[[END2:.+]] = arith.addi %[[PS2]], %c1
// CHECK: tl.for %{{[a-z0-9_]+}} = %{{.+}} to %[[END2]]
// CHECK-NEXT: tl.block "softmax_max"
// CHECK: tl.block "softmax_exp"
// CHECK: tl.block "softmax_pad"
// CHECK: tl.block "softmax_sum"
// CHECK: tl.block "softmax_scale"
// CHECK: tl.block "attention_values"
func.func @attention_two_pass_q_tile(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 4 : i64, q_tile = 2 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
// row_tiles: a scores tile per row ([tokens, heads, 8], row s), so that no
// buffer is shared between the rows (a GPU runs them at once).
// CHECK-LABEL: func.func @attention_row_tiles
// CHECK: %[[N:.+]] = memref.dim %arg0, %c0
// CHECK: %[[SC:.+]] = memref.alloc(%[[N]]) {{.*}} : memref<?x4x8xf32>
// CHECK: tl.block "attention_scores" (%[[S1:[a-z0-9_]+]] = spatial {{.*}}%[[X1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce
// CHECK-SAME: writes(%[[SC]][%[[S1]] + %{{[a-z0-9_]+}}, {{.+}}, %[[X1]]] : memref<?x4x8xf32>)
func.func @attention_row_tiles(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 4 : i64, kv_tile = 8 : i64, row_tiles = true} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 512, kv_heads = 1, head_dim = 4, element_type = f32>
// kv_splits: a call of one token splits each row's positions into 2 parts
// (1 + (2 - min(seq, 2)) * 1: index arithmetic, which a GPU's dispatch
// program evaluates), each of roundUp(ceil(context / 2), 64)
// positions from p * that, with its own max, sum and output (row s + p of
// buffers of seq + 1 rows: a prompt's one part a row per token, a decode
// step's parts a row each; the heads padded to 16, a cache line per row),
// tiles from the
// part's first position to its end; then the merge: the largest max, each
// part's weight exp(its max - the largest), the weighted sums and outputs.
// CHECK-LABEL: func.func @attention_split
// CHECK: %[[MIN:.+]] = arith.minui %[[SEQ:.+]], %c2
// CHECK: %[[SINGLE:.+]] = arith.subi %c2{{.*}}, %[[MIN]]
// CHECK: %[[EXTRA:.+]] = arith.muli %[[SINGLE]], %c1
// CHECK: %[[PARTS:.+]] = arith.addi %c1{{.*}}, %[[EXTRA]]
// CHECK: %[[ROWS:.+]] = arith.addi %{{.+}}, %c1
// CHECK: memref.alloc() {{.*}} : memref<2x2x256xf32>
// CHECK: memref.alloc(%[[ROWS]]) {{.*}} : memref<?x16xf32>
// CHECK: memref.alloc(%[[ROWS]]) {{.*}} : memref<?x16xf64>
// CHECK: memref.alloc(%[[ROWS]]) {{.*}} : memref<?x8xf32>
// CHECK: %[[ONE:.+]] = arith.cmpi eq, %[[SEQ]], %c1
// CHECK: %[[HALF:.+]] = arith.divui %{{.+}}, %c2
// CHECK: %[[SHARE:.+]] = arith.select %[[ONE]], %[[HALF]],
// CHECK: tl.for %[[P:.+]] = %{{.+}} to %[[PARTS]] step
// CHECK: %[[LO:.+]] = arith.muli %[[P]], %{{.+}}
// CHECK: tl.block "attention_init" ({{.*}}, %[[P1:[a-z0-9_]+]] = spatial %[[P]])
// CHECK-SAME: writes(%{{.+}}[%{{.+}} + %[[P1]], {{.+}}] : memref<?x16xf32>
// CHECK: tl.for %[[T0:.+]] = %[[LO]] to %{{.+}} step %c256
// CHECK: tl.block "attention_scores" ({{.*}} = spatial %[[P]], %{{.+}} = spatial %[[T0]],
// CHECK: tl.block "attention_values" ({{.*}} = spatial %[[P]], %{{.+}} = spatial %[[T0]],
// CHECK: tl.for %[[PM:.+]] = %{{.+}} to %[[PARTS]] step
// CHECK-NEXT: tl.block "attention_merge_max" ({{.*}} = reduce %[[PM]])
// CHECK: tl.block "attention_merge_weight"
// CHECK: math.exp
// CHECK: tl.block "attention_merge_sum"
// CHECK: tl.block "attention_merge_out"
// CHECK: tl.block "softmax_inv"
// CHECK: tl.block "attention_normalize"
func.func @attention_split(%q: tensor<?x8xf32>, %k: tensor<?x4xf32>, %c: !cache, %p: index) -> tensor<?x8xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64, kv_splits = 2 : i64} : tensor<?x8xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !cache
  return %0 : tensor<?x8xf32>
}

// -----

// graph.elementwise: one nest, named after its ops, whose block loads each
// input once (the bias along the trailing dimension) and computes the body's
// ops on scalars in order: add, then silu (x / (1 + exp(-x))), then mul.
// CHECK-LABEL: func.func @fused_elementwise
// CHECK-COUNT-1: tl.block
// CHECK-SAME: "add_silu_mul" (%[[I:.+]] = spatial %{{.+}}, %[[J:.+]] = spatial %{{.+}}) reads(%arg0[%[[I]], %[[J]]] : memref<?x8xf32>, %arg1[%[[J]]] : memref<8xf32>)
// CHECK: %[[X:.+]] = affine.load %arg0
// CHECK: %[[B:.+]] = affine.load %arg1
// CHECK: %[[A:.+]] = arith.addf %[[X]], %[[B]]
// CHECK: %[[NEG:.+]] = arith.negf %[[X]]
// CHECK: %[[E:.+]] = math.exp %[[NEG]]
// CHECK: %[[DEN:.+]] = arith.addf %{{.+}}, %[[E]]
// CHECK: %[[S:.+]] = arith.divf %[[X]], %[[DEN]]
// CHECK: %[[M:.+]] = arith.mulf %[[A]], %[[S]]
// CHECK: affine.store %[[M]]
// CHECK-NOT: tl.block
func.func @fused_elementwise(%x: tensor<?x8xf32>, %bias: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = graph.elementwise(%x, %bias) : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: tensor<?x8xf32>, %b: tensor<8xf32>):
    %s = graph.add %a, %b : tensor<?x8xf32>, tensor<8xf32>
    %t = graph.silu %a : tensor<?x8xf32>
    %m = graph.mul %s, %t : tensor<?x8xf32>, tensor<?x8xf32>
    graph.yield %m : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
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
// dequantized inside the matmul: the nest walks (block, element), reading
// the f16 scale and the int8 value.
// CHECK-LABEL: func.func @matmul_q8_0
// CHECK-SAME: %[[W:[a-z0-9_]+]]: memref<4x68xi8>
// CHECK: tl.block "matmul" (%[[S:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[N:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[E:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%{{[a-z0-9_]+}}[%[[S]], %[[B]] * 32 + %[[E]]] : memref<?x64xf32>, %[[W]][%[[N]], %[[B]] * 34 + %[[E]] + 2] : memref<4x68xi8>, %[[W]][%[[N]], %[[B]] * 34] : memref<4x68xi8>, %[[W]][%[[N]], %[[B]] * 34 + 1] : memref<4x68xi8>
// CHECK: arith.bitcast %{{[a-z0-9_]+}} : i16 to f16
// CHECK: arith.sitofp %{{[a-z0-9_]+}} : i8 to f32
func.func @matmul_q8_0(%x: tensor<?x64xf32>, %w: tensor<4x64x!graph.q8_0>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w : tensor<?x64xf32>, tensor<4x64x!graph.q8_0> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Q4_0: 18-byte blocks walked by their layout (block, nibble half, byte):
// byte j after the scale holds elements j (low nibble) and j + 16 (high),
// selected by a shift of half * 4; no mod or div in the indices.
// CHECK-LABEL: func.func @matmul_q4_0
// CHECK-SAME: %[[W:[a-z0-9_]+]]: memref<4x36xi8>
// CHECK: tl.block "matmul" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[N:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[HF:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[J:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%{{[a-z0-9_]+}}[%{{[a-z0-9_]+}}, %[[B]] * 32 + %[[HF]] * 16 + %[[J]]] : memref<?x64xf32>, %[[W]][%[[N]], %[[B]] * 18 + %[[J]] + 2] : memref<4x36xi8>
// CHECK-NOT: mod
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
// CHECK: tl.block "matmul" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[N:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = reduce
// CHECK-SAME: %[[W]][%[[N]], %[[B]] * 210 + 208] : memref<2x210xi8>
// CHECK-SAME: %[[W]][%[[N]], %[[B]] * 210 + 209] : memref<2x210xi8>
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
// CHECK: tl.block "matmul" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[N:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = reduce
// CHECK-SAME: %[[W]][%[[N]], %[[B]] * 144 + 2] : memref<2x144xi8>
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
// CHECK: tl.block "embedding" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[E:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%[[T]][%[[R]], %[[B]] * 34 + %[[E]] + 2] : memref<10x68xi8>, %[[T]][%[[R]], %[[B]] * 34] : memref<10x68xi8>
// CHECK: arith.sitofp
func.func @embedding_q8_0(%t: tensor<10x64x!graph.q8_0>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = graph.embedding %t[%ids] : tensor<10x64x!graph.q8_0>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// A tied head's table interleaved 4 rows at a time (#graph.interleaved):
// the row's group, then per block the 4 rows' scales as byte planes (byte
// h of row r at h * 4 + r) and their quants in chunks of 4 bytes side by
// side (quant byte j of row r at 8 + (j floordiv 4 * 4 + r) * 4 + j mod 4).
// CHECK-LABEL: func.func @embedding_interleaved
// CHECK-SAME: %[[T:[a-z0-9_]+]]: memref<2x272xi8>
// CHECK: tl.block "embedding" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[E:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%[[T]][%[[R]] floordiv 4, %[[B]] * 136 + ((%[[E]] floordiv 4) * 4 + %[[R]] mod 4) * 4 + %[[E]] mod 4 + 8] : memref<2x272xi8>, %[[T]][%[[R]] floordiv 4, %[[B]] * 136 + %[[R]] mod 4] : memref<2x272xi8>, %[[T]][%[[R]] floordiv 4, %[[B]] * 136 + %[[R]] mod 4 + 4] : memref<2x272xi8>)
func.func @embedding_interleaved(%t: tensor<8x64x!graph.q8_0, #graph.interleaved<rows = 4, chunk = 4>>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = graph.embedding %t[%ids] : tensor<8x64x!graph.q8_0, #graph.interleaved<rows = 4, chunk = 4>>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// An f32 table interleaved 16 rows at a time (the exact mode's tied head):
// element j of row r at [r floordiv 16, j * 16 + r mod 16].
// CHECK-LABEL: func.func @embedding_interleaved_f32
// CHECK-SAME: %[[T:[a-z0-9_]+]]: memref<2x1024xf32>
// CHECK: tl.block "embedding" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[J:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%[[T]][%[[R]] floordiv 16, %[[J]] * 16 + %[[R]] mod 16] : memref<2x1024xf32>)
func.func @embedding_interleaved_f32(%t: tensor<32x64xf32, #graph.interleaved<rows = 16, chunk = 4>>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %0 = graph.embedding %t[%ids] : tensor<32x64xf32, #graph.interleaved<rows = 16, chunk = 4>>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// The exact mode's product over f32 rows interleaved 32 at a time: (tokens,
// groups, k, rows), the group's rows innermost (spatial), k reducing; the
// weight's element k of the group's row r at [g, k * 32 + r], the output's
// row g * 32 + r.
// CHECK-LABEL: func.func @matmul_interleaved_f32
// CHECK-SAME: %[[X:[a-z0-9_]+]]: memref<?x64xf32>, %[[W:[a-z0-9_]+]]: memref<2x2048xf32>
// CHECK: tl.for %{{[a-z0-9_]+}} = %{{.+}} to %{{.+}} step
// CHECK: tl.for %{{[a-z0-9_]+}} = %{{.+}} to %c2{{(_[0-9]+)?}} step
// CHECK: tl.for %{{[a-z0-9_]+}} = %{{.+}} to %c64{{(_[0-9]+)?}} step
// CHECK: tl.for %{{[a-z0-9_]+}} = %{{.+}} to %c32{{(_[0-9]+)?}} step
// CHECK: tl.block "matmul" (%[[S:[a-z0-9_]+]] = spatial %{{.+}}, %[[G:[a-z0-9_]+]] = spatial %{{.+}}, %[[K:[a-z0-9_]+]] = reduce %{{.+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%[[X]][%[[S]], %[[K]]] : memref<?x64xf32>, %[[W]][%[[G]], %[[K]] * 32 + %[[R]]] : memref<2x2048xf32>
// CHECK-SAME: writes(%{{.+}}[%[[S]], %[[G]] * 32 + %[[R]]] : memref<?x64xf32>) init
func.func @matmul_interleaved_f32(%x: tensor<?x64xf32>, %w: tensor<64x64xf32, #graph.interleaved<rows = 32, chunk = 4>>) -> tensor<?x64xf32> {
  %0 = graph.matmul %x, %w : tensor<?x64xf32>, tensor<64x64xf32, #graph.interleaved<rows = 32, chunk = 4>> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// act_type f16: the activations are converted to f16 once; the product
// widens both 16-bit operands (an exact f32 product).
// CHECK-LABEL: func.func @matmul_act_f16
// CHECK: tl.block "act_round" ({{.*}}) reads({{.*}}) writes(%[[H:[a-z0-9_]+]][{{.*}}] : memref<?x64xf16>)
// CHECK: arith.truncf %{{[a-z0-9_]+}} : f32 to f16
// CHECK: tl.block "matmul"
// CHECK-SAME: %[[H]][{{.*}}] : memref<?x64xf16>
// CHECK: arith.extf %{{[a-z0-9_]+}} : f16 to f32
func.func @matmul_act_f16(%x: tensor<?x64xf32>, %w: tensor<4x64xf16>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w {act_type = f16} : tensor<?x64xf32>, tensor<4x64xf16> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// act_type q8_0 with Q4_0 weights: per 32-block absmax, f16 scale and
// int8 values (round half to even). With 4 rows ggml does not repack the
// weight, so the f32 steps follow ggml_vec_dot_q4_0_q8_0: per block the
// integer sums of eight lanes of four elements (a flat scratch of 8: nibble
// half, group), one fma(d_w * d_a, isum, acc) per (block, lane); in which
// order is the schedule's.
// CHECK-LABEL: func.func @matmul_act_q8_0
// CHECK: tl.block "act_absmax" ({{.*}} = reduce
// CHECK: arith.maximumf
// CHECK: tl.block "act_scale"
// CHECK: arith.truncf %{{[a-z0-9_]+}} : f32 to f16
// The quantization runs over (block, element): the block's scale is read by
// the block's variable (the same for every lane of a vector of elements).
// CHECK: tl.block "act_quant" (%[[QS:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[QB:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[QE:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%{{.+}}[%[[QS]], %[[QB]] * 32 + %[[QE]]] : memref<?x64xf32>, %{{.+}}[%[[QS]], %[[QB]]] : memref<?x2xf32>)
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{[a-z0-9_]+}} : f32 to i8
// CHECK: %[[SUMS:.+]] = memref.alloca() {{.*}} : memref<8xi32>
// CHECK: tl.block "matmul_idot" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[L0:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[L1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: memref<?x64xi8>
// CHECK-SAME: writes(%[[SUMS]][%[[L0]] * 4 + %[[L1]]] : memref<8xi32>)
// CHECK: arith.muli %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} : i32
// CHECK: tl.block "matmul_iscale" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}})
// CHECK: math.fma
func.func @matmul_act_q8_0(%x: tensor<?x64xf32>, %w: tensor<4x64x!graph.q4_0>) -> tensor<?x4xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<4x64x!graph.q4_0> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// With a multiple of 8 rows ggml repacks Q4_0 (block_q4_0x8): one integer
// sum and one fused multiply-add per 32-block and output, no lanes.
// CHECK-LABEL: func.func @matmul_act_q8_0_repacked
// CHECK: memref.alloca() {{.*}} : memref<1xi32>
// CHECK: tl.block "matmul_idot"
// CHECK: tl.block "matmul_iscale" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}})
// CHECK: math.fma
// CHECK: return
func.func @matmul_act_q8_0_repacked(%x: tensor<?x64xf32>, %w: tensor<8x64x!graph.q4_0>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<8x64x!graph.q4_0> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// The same product over a weight interleaved 8 rows at a time
// (#graph.interleaved): [row groups, their bytes], 8 x 18 bytes per block.
// Per group and block the 8 rows' integer sums side by side (r spatial,
// next to the group of four i0: byte 4 i1 + i0 of row r at 16 + (8 i1 + r)
// * 4 + i0), the nibbles unsigned; then one step per row and block, the
// offset of 8 taken off through the block's activation sum (<< 3), the f16
// scale of row r read from two byte planes (r, 8 + r).
// CHECK-LABEL: func.func @matmul_act_q8_0_interleaved
// CHECK: tl.block "act_sum"
// CHECK: %[[SUMS:.+]] = memref.alloca() {{.*}} : memref<8xi32>
// CHECK: tl.block "matmul_idot" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[G:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}}, %[[I1:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I0:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %{{.*}}[%[[G]], %[[B]] * 144 + (%[[I1]] * 8 + %[[R]]) * 4 + %[[I0]] + 16] : memref<1x288xi8>
// CHECK-SAME: writes(%[[SUMS]][%[[R]]] : memref<8xi32>)
// CHECK: arith.extui %{{[a-z0-9_]+}} : i8 to i32
// CHECK: tl.block "matmul_iscale" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[G2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[R2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: [%[[G2]], %[[B2]] * 144 + %[[R2]]] : memref<1x288xi8>, %{{.*}}[%[[G2]], %[[B2]] * 144 + %[[R2]] + 8] : memref<1x288xi8>
// CHECK-SAME: writes(%{{.*}}[%{{[a-z0-9_]+}}, %[[G2]] * 8 + %[[R2]]] : memref<?x8xf32>)
// CHECK: arith.shli %{{[a-z0-9_]+}}, %c3_i32 : i32
// CHECK: arith.subi
// CHECK: math.fma
func.func @matmul_act_q8_0_interleaved(%x: tensor<?x64xf32>, %w: tensor<8x64x!graph.q4_0, #graph.interleaved<rows = 8, chunk = 4>>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<8x64x!graph.q4_0, #graph.interleaved<rows = 8, chunk = 4>> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Q8_0 interleaved 8 rows at a time: 8 x 34 bytes per block. Each row keeps
// vec_dot's 8 f32 lanes (lane i1: the group of four i1 of every block),
// explicit here as acc[i1 * 8 + r], zeroed once per row group; per block the
// integer sums isum[i1 * 8 + r] start at the activations' sums of four times
// -128 and add the weight's bytes biased to unsigned (xor 0x80, extui) times
// the activations (byte 4 i1 + i0 of row r at 16 + (8 i1 + r) * 4 + i0);
// the steps reduce over the blocks only; then hsum_float_8's order.
// CHECK-LABEL: func.func @matmul_q8_0_interleaved
// CHECK: tl.block "act_sum"
// CHECK: arith.muli %{{.+}}, %c-128_i32 : i32
// CHECK: %[[ACC:.+]] = memref.alloca() {{.*}} : memref<64xf32>
// CHECK: tl.block "matmul_lanes_init" {{.*}} writes(%[[ACC]][
// CHECK: %[[SUMS:.+]] = memref.alloca() {{.*}} : memref<64xi32>
// CHECK: tl.block "matmul_idot" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[G:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I0:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %{{.*}}[%[[G]], %[[B]] * 272 + (%[[I1]] * 8 + %[[R]]) * 4 + %[[I0]] + 16] : memref<1x544xi8>
// CHECK-SAME: writes(%[[SUMS]][%[[I1]] * 8 + %[[R]]] : memref<64xi32>)
// CHECK: arith.xori %{{.+}}, %c-128_i8 : i8
// CHECK: arith.extui %{{[a-z0-9_]+}} : i8 to i32
// CHECK: tl.block "matmul_iscale" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[G2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[L2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[R2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: [%[[G2]], %[[B2]] * 272 + %[[R2]]] : memref<1x544xi8>, %{{.*}}[%[[G2]], %[[B2]] * 272 + %[[R2]] + 8] : memref<1x544xi8>
// CHECK-SAME: writes(%[[ACC]][%[[L2]] * 8 + %[[R2]]] : memref<64xf32>)
// CHECK-NOT: init
// CHECK: math.fma
// CHECK: tl.block "matmul_out"
// CHECK-NEXT: %[[L0:.+]] = affine.load %[[ACC]][%[[O:[a-z0-9_]+]]]
// CHECK-NEXT: %[[L4:.+]] = affine.load %[[ACC]][%[[O]] + 32]
// CHECK-NEXT: %[[S04:.+]] = arith.addf %[[L0]], %[[L4]]
// CHECK-NEXT: %[[L2:.+]] = affine.load %[[ACC]][%[[O]] + 16]
// CHECK-NEXT: %[[L6:.+]] = affine.load %[[ACC]][%[[O]] + 48]
// CHECK-NEXT: %[[S26:.+]] = arith.addf %[[L2]], %[[L6]]
// CHECK-NEXT: %[[E:.+]] = arith.addf %[[S04]], %[[S26]]
// CHECK-COUNT-3: arith.addf
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[E]], %{{.+}} : f32
// CHECK-NEXT: affine.store %[[SUM]]
func.func @matmul_q8_0_interleaved(%x: tensor<?x64xf32>, %w: tensor<8x64x!graph.q8_0, #graph.interleaved<rows = 8, chunk = 4>>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<8x64x!graph.q8_0, #graph.interleaved<rows = 8, chunk = 4>> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Q6_K interleaved 8 rows at a time: 8 x 210 bytes per super-block, the 18
// header bytes (16 sub-block scales, d) in byte planes, then ql and qh four
// bytes at a time. vec_dot's 8 lanes per row as for Q8_0; per super-block
// and (hf, qa, qb, l1, l0a) the group of four's dot of each row, the 6-bit
// q unsigned (ql's nibble qa: ql chunk 16 hf + 8 qb + 4 l1 + l0a; qh's bits
// 4 qa + 2 qb: qh chunk 32 + 8 hf + 4 l1 + l0a), then scaled by sub-block
// 8 hf + 4 qa + 2 qb + l1's scale into lane 4 l1 + l0a, the run (hf, qa,
// qb) reducing; each lane starts at its offset, the scales of sub-blocks
// 2m, 2m + 1 times the activations' sums of 16 precomputed times -32. The
// steps read d from planes 16 and 17.
// CHECK-LABEL: func.func @matmul_q6_k_interleaved
// CHECK: tl.block "act_sum"
// CHECK: arith.muli %{{.+}}, %c-32_i32 : i32
// CHECK: %[[ACC:.+]] = memref.alloca() {{.*}} : memref<64xf32>
// CHECK: tl.block "matmul_lanes_init" {{.*}} writes(%[[ACC]][
// CHECK: %[[SUMS:.+]] = memref.alloca() {{.*}} : memref<64xi32>
// CHECK: %[[DOTS:.+]] = memref.alloca() {{.*}} : memref<8xi32>
// CHECK: tl.block "matmul_idot" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[G:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[HF:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[QA:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[QB:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[L1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[L0A:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[L0B:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: %{{.*}}[%[[G]], %[[B]] * 1680 + ((%[[HF]] * 16 + %[[QB]] * 8 + %[[L1]] * 4 + %[[L0A]]) * 8 + %[[R]]) * 4 + %[[L0B]] + 144] : memref<1x1680xi8>
// CHECK-SAME: %{{.*}}[%[[G]], %[[B]] * 1680 + ((%[[HF]] * 8 + %[[L1]] * 4 + %[[L0A]] + 32) * 8 + %[[R]]) * 4 + %[[L0B]] + 144] : memref<1x1680xi8>
// CHECK-SAME: writes(%[[DOTS]][%[[R]]] : memref<8xi32>)
// CHECK: arith.shrui
// CHECK: arith.andi %{{.+}}, %c15_i8
// CHECK: arith.shrui
// CHECK: arith.andi %{{.+}}, %c3_i8
// CHECK: arith.shli %{{.+}}, %c4_i8
// CHECK: arith.ori
// CHECK: arith.extui %{{[a-z0-9_]+}} : i8 to i32
// CHECK: tl.block "matmul_isum" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[G2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[HF2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[QA2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[QB2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[L12:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[L0A2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[R2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%[[DOTS]][%[[R2]]] : memref<8xi32>, %{{.*}}[%[[G2]], %[[B2]] * 1680 + (%[[HF2]] * 8 + %[[QA2]] * 4 + %[[QB2]] * 2 + %[[L12]]) * 8 + %[[R2]]] : memref<1x1680xi8>
// CHECK-SAME: [%[[G2]], %[[B2]] * 1680 + (%[[L12]] * 4 + %[[L0A2]]) * 16 + %[[R2]]] : memref<1x1680xi8>, %{{.*}}[%{{[a-z0-9_]+}}, %[[B2]] * 16 + (%[[L12]] * 4 + %[[L0A2]]) * 2] : memref<?x16xi32>
// CHECK-SAME: [%[[G2]], %[[B2]] * 1680 + ((%[[L12]] * 4 + %[[L0A2]]) * 2 + 1) * 8 + %[[R2]]] : memref<1x1680xi8>, %{{.*}}[%{{[a-z0-9_]+}}, %[[B2]] * 16 + (%[[L12]] * 4 + %[[L0A2]]) * 2 + 1] : memref<?x16xi32>
// CHECK-SAME: writes(%[[SUMS]][(%[[L12]] * 4 + %[[L0A2]]) * 8 + %[[R2]]] : memref<64xi32>) init {
// CHECK: tl.block "matmul_iscale" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[G3:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[B3:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[R3:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: [%[[G3]], %[[B3]] * 1680 + %[[R3]] + 128] : memref<1x1680xi8>, %{{.*}}[%[[G3]], %[[B3]] * 1680 + %[[R3]] + 136] : memref<1x1680xi8>
// CHECK: math.fma
// CHECK: tl.block "matmul_out"
func.func @matmul_q6_k_interleaved(%x: tensor<?x256xf32>, %w: tensor<8x256x!graph.q6_k, #graph.interleaved<rows = 8, chunk = 4>>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<8x256x!graph.q6_k, #graph.interleaved<rows = 8, chunk = 4>> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Q4_K interleaved 8 rows at a time: 8 x 144 bytes per super-block, the 16
// header bytes (d, dmin, 12 of scales) in byte planes, then the quants four
// bytes at a time. Per super-block each lane (row r) gets the dot of each
// sub-block 2c + h (c = 2 ja + jb; quant byte 32 c + 4 i1 + i0 at 128 + ((8
// c + i1) * 8 + r) * 4 + i0), the scaled sums per 64-element group and the
// mins times the activation sums (the 6-bit scales from planes 4 + sub, 8
// + sub, 12 + sub with sub = 2 jb + h), then the d and dmin chains of each
// row (d from planes 0, 1; dmin from 2, 3), subtracted into the output.
// CHECK-LABEL: func.func @matmul_act_q8_k_interleaved
// CHECK: %[[DOTS:.+]] = memref.alloca() {{.*}} : memref<64xi32>
// CHECK: tl.block "matmul_idot" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[G:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[SB:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[JA:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[JB:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[H:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I1:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[R:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I0:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}})
// CHECK-SAME: [%[[G]], %[[SB]] * 1152 + (((%[[JA]] * 2 + %[[JB]]) * 8 + %[[I1]]) * 8 + %[[R]]) * 4 + %[[I0]] + 128] : memref<1x1152xi8>
// CHECK-SAME: writes(%[[DOTS]][((%[[JA]] * 2 + %[[JB]]) * 2 + %[[H]]) * 8 + %[[R]]] : memref<64xi32>)
// CHECK: tl.block "matmul_isum" ({{.*}}, %[[JB2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[H2:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[R2:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: * 1152 + (%[[JB2]] * 2 + %[[H2]] + 4) * 8 + %[[R2]]] : memref<1x1152xi8>
// CHECK: tl.block "matmul_imin"
// CHECK: tl.block "matmul_iscale" ({{.*}}, %[[SB3:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[R3:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: [%{{[a-z0-9_]+}}, %[[SB3]] * 1152 + %[[R3]]] : memref<1x1152xi8>, %{{.*}}[%{{[a-z0-9_]+}}, %[[SB3]] * 1152 + %[[R3]] + 8] : memref<1x1152xi8>
// CHECK: arith.select
// CHECK: tl.block "matmul_imin_scale" ({{.*}}, %[[SB4:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[R4:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: [%{{[a-z0-9_]+}}, %[[SB4]] * 1152 + %[[R4]] + 16] : memref<1x1152xi8>, %{{.*}}[%{{[a-z0-9_]+}}, %[[SB4]] * 1152 + %[[R4]] + 24] : memref<1x1152xi8>
// CHECK: tl.block "matmul_out"
// CHECK: arith.subf
func.func @matmul_act_q8_k_interleaved(%x: tensor<?x256xf32>, %w: tensor<8x256x!graph.q4_k, #graph.interleaved<rows = 8, chunk = 4>>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<8x256x!graph.q4_k, #graph.interleaved<rows = 8, chunk = 4>> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// act_type q8_k with Q4_K weights: 256-blocks scaled by the signed value
// of largest magnitude (-127/max, clamped to 127), with the sums of each
// 32 activations. The signed value (the first on ties, as
// quantize_row_q8_K's scan finds it) from reductions exact in any order:
// the magnitude (a max skipping NaN, as the scan does), the least key of
// the elements of that magnitude (2j for +max, 2j + 1 for -max; 512 for
// none: an all-NaN block), then the value by the key's parity. Integer
// sums: the dot of each group of four (one VNNI
// lane), scaled by its sub-block's scale and summed per 64-element group;
// the mins times the activation sums of each sub-block. Repacked (a
// multiple of 8 rows), the d and dmin chains take one step per group for
// the prompt rows ggml's gemm takes (in whole fours, when there are more
// than three) and one per super-block of the groups' sums for the others;
// subtracted.
// CHECK-LABEL: func.func @matmul_act_q8_k
// CHECK: tl.block "act_absmax"
// CHECK: math.absf
// CHECK: arith.maxnumf
// CHECK: tl.block "act_first" (%{{.+}} = spatial %{{.+}}, %{{.+}} = spatial %{{.+}}, %[[J:.+]] = reduce
// CHECK: affine.store %c512_i32
// CHECK: %[[X:.+]] = affine.load %arg0
// CHECK-NEXT: %[[M:.+]] = affine.load
// CHECK: %[[TWOJ:.+]] = arith.muli %[[J]], %c2
// CHECK-NEXT: %[[EVEN:.+]] = arith.index_cast %[[TWOJ]] : index to i32
// CHECK: %[[ODD:.+]] = arith.addi %[[EVEN]], %c1_i32
// CHECK-NEXT: %[[PLUS:.+]] = arith.cmpf oeq, %[[X]], %[[M]]
// CHECK-NEXT: %[[NEGM:.+]] = arith.negf %[[M]]
// CHECK-NEXT: %[[MINUS:.+]] = arith.cmpf oeq, %[[X]], %[[NEGM]]
// CHECK: %[[K1:.+]] = arith.select %[[MINUS]], %[[ODD]], %c512_i32
// CHECK-NEXT: %[[KEY:.+]] = arith.select %[[PLUS]], %[[EVEN]], %[[K1]]
// CHECK: arith.minsi %{{.+}}, %[[KEY]]
// CHECK: tl.block "act_signed_max"
// CHECK-NEXT: %[[MAG:.+]] = affine.load
// CHECK-NEXT: %[[F:.+]] = affine.load
// CHECK: %[[NONE:.+]] = arith.cmpi eq, %[[F]], %c512_i32
// CHECK: %[[BIT:.+]] = arith.andi %[[F]], %c1_i32
// CHECK: %[[NEG:.+]] = arith.cmpi ne, %[[BIT]], %c0_i32
// CHECK-NEXT: %[[NMAG:.+]] = arith.negf %[[MAG]]
// CHECK-NEXT: %[[SIGNED:.+]] = arith.select %[[NEG]], %[[NMAG]], %[[MAG]]
// CHECK: arith.select %[[NONE]], %{{.+}}, %[[SIGNED]]
// CHECK: tl.block "act_quant"
// CHECK: math.roundeven
// CHECK: arith.minimumf
// CHECK: tl.block "act_sum" ({{.*}} = reduce %{{[a-z0-9_]+}}) reads(%{{[a-z0-9_]+}}[%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} * 32 + %{{[a-z0-9_]+}}]
// CHECK: %[[DOTS:.+]] = memref.alloca() {{.*}} : memref<64xi32>
// CHECK: tl.block "matmul_idot"
// CHECK-SAME: writes(%[[DOTS]]
// CHECK-NOT: arith.select
// CHECK: arith.muli
// CHECK: tl.block "matmul_isum"
// CHECK-SAME: reads(%[[DOTS]]
// CHECK: tl.block "matmul_imin"
// CHECK: tl.block "matmul_iscale"
// CHECK-COUNT-4: math.fma
// CHECK: arith.addi
// CHECK: math.fma
// CHECK: arith.select
// CHECK: tl.block "matmul_imin_scale"
// CHECK: tl.block "matmul_out"
// CHECK: arith.subf
func.func @matmul_act_q8_k(%x: tensor<?x256xf32>, %w: tensor<8x256x!graph.q4_k>) -> tensor<?x8xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<8x256x!graph.q4_k> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Not repacked (2 rows): ggml_vec_dot_q4_K_q8_K's lanes, eight for the
// scaled sums (a group of four at one offset in every sub-block), four for
// the mins (the 64-element groups), in f32: the activations' sums converted
// once, each product and sum an integer below 2^24, so exact.
// CHECK-LABEL: func.func @matmul_act_q8_k_rows
// CHECK: tl.block "act_sum_f32"
// CHECK: arith.sitofp
// CHECK: tl.block "matmul_idot"
// CHECK: tl.block "matmul_isum"
// CHECK-SAME: writes(%{{[a-z0-9_]+}}[%{{[a-z0-9_]+}}] : memref<8xi32>)
// CHECK: tl.block "matmul_imin"
// CHECK-SAME: writes(%{{[a-z0-9_]+}}[%{{[a-z0-9_]+}} * 2 + %{{[a-z0-9_]+}}] : memref<4xf32>)
// CHECK: arith.uitofp
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tl.block "matmul_iscale" ({{.*}} = reduce %{{[a-z0-9_]+}}, %{{[a-z0-9_]+}} = reduce %{{[a-z0-9_]+}})
// CHECK: math.fma
// CHECK: tl.block "matmul_imin_scale"
// CHECK: tl.block "matmul_out"
func.func @matmul_act_q8_k_rows(%x: tensor<?x256xf32>, %w: tensor<2x256x!graph.q4_k>) -> tensor<?x2xf32> {
  %0 = graph.matmul %x, %w {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<2x256x!graph.q4_k> -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
}

// -----

// act_type q8_k with Q6_K weights: ggml_vec_dot_q6_K_q8_K's lanes, the
// unsigned 6-bit values' dots times their int8 scale, minus per lane 32 *
// scale * (sums of 16 activations) of two 16-element runs.
// CHECK-LABEL: func.func @matmul_act_q6_k
// CHECK: tl.block "act_sum"
// CHECK: tl.block "matmul_idot"
// CHECK: tl.block "matmul_isum"
// CHECK: tl.block "matmul_iscale"
// CHECK: arith.shli
// CHECK: arith.subi
// CHECK: math.fma
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

// SiLU is x / (1 + exp(-x)) with math.exp: how exp is computed (on the CPU,
// ggml_v_expf's polynomial) is the back end's.
// CHECK-LABEL: func.func @silu
// CHECK: tl.block "silu"
// CHECK: math.exp
// CHECK: arith.divf
func.func @silu(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = graph.silu %x : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// The last n rows: a copy into n rows, each reading row (rows - n + i),
// given to the block as an iteration value.
// CHECK-LABEL: func.func @last_rows
// CHECK-SAME: (%[[X:.+]]: memref<?x8xf32>, %[[N:.+]]: index)
// CHECK: %[[ROWS:.+]] = memref.dim %[[X]]
// CHECK: %[[FIRST:.+]] = arith.subi %[[ROWS]], %[[N]]
// CHECK: %[[OUT:.+]] = memref.alloc(%[[N]]) {{.*}} : memref<?x8xf32>
// CHECK: tl.for %[[I:.+]] = %{{.*}} to %[[N]]
// CHECK: %[[SRC:.+]] = arith.addi %[[FIRST]], %[[I]]
// CHECK: tl.block "last_rows" (%[[D:.+]] = spatial %[[I]], %[[S:.+]] = spatial %[[SRC]], %[[C:.+]] = spatial %{{.*}}) reads(%[[X]][%[[S]], %[[C]]] : memref<?x8xf32>) writes(%[[OUT]][%[[D]], %[[C]]] : memref<?x8xf32>)
// CHECK: return %[[OUT]]
func.func @last_rows(%x: tensor<?x8xf32>, %n: index) -> tensor<?x8xf32> {
  %0 = graph.last_rows %x, %n : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Values in blocks of positions (graph-kv-layout, the two-pass softmax on a
// CPU): value (t, d) at (t floordiv 8) * 8 * head_dim + d * 8 + t mod 8, in
// the step's store and in p.V's reads alike.
!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32, values_block = 8>
// CHECK-LABEL: func.func @attention_values_blocked
// CHECK: tl.block "kv_store_v" (%{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[VP:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[VKH:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[VD:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: writes(%subview[1, %[[VKH]], (%[[VP]] floordiv 8) * 32 + %[[VD]] * 8 + %[[VP]] mod 8]
// CHECK: tl.block "attention_values" ({{.*}}%[[X:[a-z0-9_]+]] = reduce %{{[a-z0-9_]+}}, %[[D:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: %subview[1, %{{[a-z0-9_]+}}, (%[[X]] floordiv 8) * 32 + %[[D]] * 8 + %[[X]] mod 8]
func.func @attention_values_blocked(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) -> tensor<?x16xf32> {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return %0 : tensor<?x16xf32>
}
