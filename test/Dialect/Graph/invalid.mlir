// RUN: llm-opt %s -split-input-file -verify-diagnostics

func.func @param_dynamic(%w: !graph.weights) {
  // expected-error @+1 {{parameter 'p' must have a static shape}}
  %0 = graph.param %w["p"] : tensor<?x4xf32>
  return
}

// -----

func.func @param_dtype(%w: !graph.weights) {
  // expected-error @+1 {{is stored as 'i8'; supported stored types are f32, f16 and bf16}}
  %0 = graph.param %w["p"] {source = #graph.extern<file = "f", offset = 0, dtype = i8>} : tensor<4xf32>
  return
}

// -----

func.func @param_name(%w: !graph.weights) {
  // expected-error @+1 {{parameter name must not be empty}}
  %0 = graph.param %w[""] : tensor<4xf32>
  return
}

// -----

func.func @embedding_rows(%t: tensor<10x8xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{result row size 4 does not match table row size 8}}
  %0 = graph.embedding %t[%ids] : tensor<10x8xf32>, tensor<?xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @rms_norm_weight(%x: tensor<?x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{weight must be a vector of the last input dimension (8)}}
  %0 = graph.rms_norm %x, %g {eps = 1.0e-5 : f32} : tensor<?x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @rms_norm_eps(%x: tensor<?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive}}
  %0 = graph.rms_norm %x, %g {eps = 0.0 : f32} : tensor<?x8xf32>, tensor<8xf32>
  return
}

// -----

func.func @matmul_contraction(%x: tensor<?x8xf32>, %w: tensor<4x6xf32>) {
  // expected-error @+1 {{contraction size mismatch: input has 8, weight [out, in] has 6}}
  %0 = graph.matmul %x, %w : tensor<?x8xf32>, tensor<4x6xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @matmul_out(%x: tensor<?x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{result size 5 does not match weight rows 4}}
  %0 = graph.matmul %x, %w : tensor<?x8xf32>, tensor<4x8xf32> -> tensor<?x5xf32>
  return
}

// -----

func.func @add_broadcast(%x: tensor<?x8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{is not the trailing shape of lhs}}
  %0 = graph.add %x, %b : tensor<?x8xf32>, tensor<4xf32>
  return
}

// -----

func.func @rope_odd(%x: tensor<?x9xf32>, %p: index) {
  // expected-error @+1 {{head_dim must be positive and even, got 3}}
  %0 = graph.rope %x, %p {head_dim = 3 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x9xf32>
  return
}

// -----

func.func @rope_width(%x: tensor<?x10xf32>, %p: index) {
  // expected-error @+1 {{last dimension (10) must be a static multiple of head_dim 4}}
  %0 = graph.rope %x, %p {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x10xf32>
  return
}

// -----

func.func @rope_norm_no_eps(%x: tensor<?x8xf32>, %p: index, %g: tensor<4xf32>) {
  // expected-error @+1 {{norm and norm_eps come together}}
  %0 = graph.rope %x, %p norm(%g : tensor<4xf32>) {head_dim = 4 : i64, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return
}

// -----

func.func @rope_eps_no_norm(%x: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{norm and norm_eps come together}}
  %0 = graph.rope %x, %p {head_dim = 4 : i64, norm_eps = 1.0e-6 : f32, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return
}

// -----

func.func @rope_norm_size(%x: tensor<?x8xf32>, %p: index, %g: tensor<8xf32>) {
  // expected-error @+1 {{norm weight must be a vector of head_dim (4), got 'tensor<8xf32>'}}
  %0 = graph.rope %x, %p norm(%g : tensor<8xf32>) {head_dim = 4 : i64, norm_eps = 1.0e-6 : f32, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return
}

// -----

func.func @rope_norm_eps(%x: tensor<?x8xf32>, %p: index, %g: tensor<4xf32>) {
  // expected-error @+1 {{norm_eps must be positive}}
  %0 = graph.rope %x, %p norm(%g : tensor<4xf32>) {head_dim = 4 : i64, norm_eps = 0.0 : f32, theta = 1.0e4 : f64, style = #graph.rope_style<half>} : tensor<?x8xf32>
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_groups(%q: tensor<?x12xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{num_heads (3) must be a positive multiple of num_kv_heads (2)}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 3 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x12xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_layer(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{layer 2 is out of range [0, 2)}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 2 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_kv_pad_zero(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{kv_pad must be at least 1, got 0}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 0 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_softmax_block_negative(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{softmax_block must be 0 or positive, got -16}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, softmax_block = -16 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_kv_tile_negative(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{kv_tile must be 0 or positive, got -1}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_tile = -1 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_kv_tile_pad(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{kv_tile (12) must be a multiple of kv_pad (8)}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = 8 : i64, kv_tile = 12 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_kv_tile_runs(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{kv_tile (online softmax) and softmax_block (two passes) exclude each other}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_tile = 16 : i64, softmax_block = 4 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_kv_pad_negative(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{kv_pad must be at least 1, got -64}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_pad = -64 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_kv_splits_zero(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{kv_splits must be at least 1, got 0}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_tile = 16 : i64, kv_splits = 0 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_kv_splits_two_pass(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{kv_splits (2) needs flash attention (kv_tile > 0)}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_splits = 2 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 2, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_k_shape(%q: tensor<?x16xf32>, %k: tensor<?x12xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{k must be [seq, 8]}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x16xf32>, tensor<?x12xf32>, tensor<?x12xf32>, !cache
  return
}

// -----

// expected-error @+1 {{kv_cache sizes must be positive}}
func.func @cache_sizes(%c: !graph.kv_cache<layers = 0, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>) {
  return
}

// -----

// Keys transposed only beside values by position (llmc/abi.h's layouts).
// expected-error @+1 {{kv_cache keys_by_dim needs values_by_position}}
func.func @keys_by_dim_alone(%c: !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32, keys_by_dim = true>) {
  return
}

// -----

// Blocks of positions only for transposed values, and only whole blocks.
// expected-error @+1 {{kv_cache values_block = 16 needs transposed values and a max_seq (16) it divides}}
func.func @values_block_by_position(%c: !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32, values_by_position = true, values_block = 16>) {
  return
}

// -----

// expected-error @+1 {{kv_cache values_block = 8 needs transposed values and a max_seq (12) it divides}}
func.func @values_block_odd(%c: !graph.kv_cache<layers = 1, max_seq = 12, kv_heads = 2, head_dim = 4, element_type = f32, values_block = 8>) {
  return
}

// -----

func.func @reshape_elements(%x: tensor<?x16xf32>) {
  // expected-error @+1 {{trailing dimensions hold 16 elements in the operand but 12 in the result}}
  %0 = graph.reshape %x : tensor<?x16xf32> -> tensor<?x3x4xf32>
  return
}

// -----

func.func @q8_0_rows(%w: !graph.weights) {
  // expected-error @+1 {{'!graph.q8_0' rows must be a multiple of 32 long, got 48}}
  %0 = graph.param %w["p"] : tensor<4x48x!graph.q8_0>
  return
}

// -----

func.func @q8_0_source(%w: !graph.weights) {
  // expected-error @+1 {{a quantized parameter is stored as its own element type}}
  %0 = graph.param %w["p"] {source = #graph.extern<file = "f", offset = 0, dtype = f16>} : tensor<4x64x!graph.q8_0>
  return
}

// -----

func.func @q6_k_rows(%w: !graph.weights) {
  // expected-error @+1 {{'!graph.q6_k' rows must be a multiple of 256 long, got 64}}
  %0 = graph.param %w["p"] : tensor<4x64x!graph.q6_k>
  return
}

// -----

func.func @act_type_mismatch(%x: tensor<?x256xf32>, %w: tensor<4x256x!graph.q4_0>) -> tensor<?x4xf32> {
  // expected-error @+1 {{act_type '!graph.q8_k' does not fit a weight of '!graph.q4_0'}}
  %0 = graph.matmul %x, %w {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<4x256x!graph.q4_0> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @last_rows_static(%x: tensor<4x8xf32>, %n: index) {
  // expected-error @+1 {{operand must have a dynamic leading (row) dimension}}
  %0 = graph.last_rows %x, %n : tensor<4x8xf32>
  return
}

// -----

func.func @interleaved_rows(%w: !graph.weights) {
  // expected-error @+1 {{parameter 'p': #graph.interleaved<rows = 16, chunk = 4> needs rows that divide the matrix's 8 and a chunk that divides a block's 16 quant bytes}}
  %0 = graph.param %w["p"] : tensor<8x64x!graph.q4_0, #graph.interleaved<rows = 16, chunk = 4>>
  return
}

// -----

func.func @interleaved_type(%w: !graph.weights) {
  // expected-error @+1 {{only matrices of f32, f16, bf16 or of Q8_0, Q4_0, Q4_K or Q6_K blocks are interleaved}}
  %0 = graph.param %w["p"] : tensor<8x16x16xf32, #graph.interleaved<rows = 8, chunk = 4>>
  return
}

// -----

// A float matrix is interleaved element by element: its chunk is one
// element's bytes.
func.func @interleaved_float_chunk(%w: !graph.weights) {
  // expected-error @+1 {{parameter 'p': #graph.interleaved<rows = 8, chunk = 4> needs rows that divide the matrix's 8 and a chunk of one element's 2 bytes}}
  %0 = graph.param %w["p"] : tensor<8x256xf16, #graph.interleaved<rows = 8, chunk = 4>>
  return
}

// -----

// Interleaved floats are read by f32 products: the llama.cpp mode's
// rounded activations (an act_type) do not read them.
func.func @interleaved_float_act(%x: tensor<?x64xf32>, %w: tensor<16x64xf32, #graph.interleaved<rows = 16, chunk = 4>>) -> tensor<?x16xf32> {
  // expected-error @+1 {{an interleaved float weight is read by f32 products (no act_type), got act_type 'f16'}}
  %0 = graph.matmul %x, %w {act_type = f16} : tensor<?x64xf32>, tensor<16x64xf32, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<?x16xf32>
  return %0 : tensor<?x16xf32>
}

// -----

func.func @interleaved_exact(%x: tensor<?x64xf32>, %w: tensor<8x64x!graph.q4_0, #graph.interleaved<rows = 8, chunk = 4>>) -> tensor<?x8xf32> {
  // expected-error @+1 {{an interleaved weight needs an 8-bit act_type (!graph.q8_0, !graph.q8_k)}}
  %0 = graph.matmul %x, %w : tensor<?x64xf32>, tensor<8x64x!graph.q4_0, #graph.interleaved<rows = 8, chunk = 4>> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

func.func @interleaved_table(%ids: tensor<?xi32>, %t: tensor<12x64x!graph.q4_0, #graph.interleaved<rows = 8, chunk = 4>>) -> tensor<?x64xf32> {
  // expected-error @+1 {{the table must be plain or rows interleaved in groups that divide them}}
  %0 = graph.embedding %t[%ids] : tensor<12x64x!graph.q4_0, #graph.interleaved<rows = 8, chunk = 4>>, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @table_layout(%ids: tensor<?xi32>, %t: tensor<8x64xf32, "blocked">) -> tensor<?x64xf32> {
  // expected-error @+1 {{the table must be plain or rows interleaved in groups that divide them}}
  %0 = graph.embedding %t[%ids] : tensor<8x64xf32, "blocked">, tensor<?xi32> -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @unknown_layout(%w: !graph.weights) {
  // expected-error @+1 {{parameter 'p' has an unknown layout "rows"}}
  %0 = graph.param %w["p"] : tensor<8x64x!graph.q4_0, "rows">
  return
}

// -----

func.func @elementwise_not_fusable(%x: tensor<?x8xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = graph.elementwise(%x, %w) : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: tensor<?x8xf32>, %b: tensor<8xf32>):
    // expected-error @+1 {{cannot be fused into graph.elementwise (only graph.silu, graph.add and graph.mul)}}
    %n = graph.rms_norm %a, %b {eps = 1.0e-5 : f32} : tensor<?x8xf32>, tensor<8xf32>
    graph.yield %n : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}

// -----

func.func @elementwise_no_shaped_input(%w: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{needs an input of the result's type 'tensor<?x8xf32>'}}
  %0 = graph.elementwise(%w) : (tensor<8xf32>) -> tensor<?x8xf32> {
  ^bb0(%b: tensor<8xf32>):
    %s = graph.silu %b : tensor<8xf32>
    graph.yield %s : tensor<8xf32>
  }
  return %0 : tensor<?x8xf32>
}

// -----

func.func @elementwise_not_trailing(%x: tensor<?x8xf32>, %w: tensor<4xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{input 'tensor<4xf32>' is not of the result's trailing shape 'tensor<?x8xf32>'}}
  %0 = graph.elementwise(%x, %w) : (tensor<?x8xf32>, tensor<4xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: tensor<?x8xf32>, %b: tensor<4xf32>):
    %s = graph.silu %a : tensor<?x8xf32>
    graph.yield %s : tensor<?x8xf32>
  }
  return %0 : tensor<?x8xf32>
}

// -----

!cache = !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_row_tiles_two_pass(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{row_tiles needs flash attention (kv_tile > 0)}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, row_tiles = true} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

!cache = !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_q_tile_zero(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{q_tile must be at least 1, got 0}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_tile = 8 : i64, q_tile = 0 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}


// -----

!cache = !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32>
func.func @attention_q_tile_row_tiles(%q: tensor<?x16xf32>, %k: tensor<?x8xf32>, %c: !cache, %p: index) {
  // expected-error @+1 {{q_tile (2) excludes row_tiles}}
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 0 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 4 : i64, scale = 0.5 : f32, kv_tile = 8 : i64, row_tiles = true, q_tile = 2 : i64} : tensor<?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>, !cache
  return
}

// -----

// expected-error @+1 {{kv_cache values_block must be positive (or 0: no blocks), got -4}}
func.func @values_block_negative(%c: !graph.kv_cache<layers = 1, max_seq = 16, kv_heads = 2, head_dim = 4, element_type = f32, values_block = -4>) {
  return
}
