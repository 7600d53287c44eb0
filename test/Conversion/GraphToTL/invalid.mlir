// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -verify-diagnostics

func.func @no_offset(%w: !graph.weights) -> tensor<4xf32> {
  // expected-error @+2 {{parameter 'p' has no blob_offset; run graph-layout-weights first}}
  // expected-error @+1 {{failed to legalize operation 'graph.param'}}
  %0 = graph.param %w["p"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Chunks of eight bytes: the verifier takes any layout the writer can lay
// out, but the products read only chunks of four (one VPDPBUSD group).
func.func @interleaved_chunk_8(%x: tensor<?x64xf32>, %w: tensor<8x64x!graph.q8_0, #graph.interleaved<rows = 8, chunk = 8>>) -> tensor<?x8xf32> {
  // expected-error @+2 {{no lowering reads a weight laid out as 'tensor<8x64x!graph.q8_0, #graph.interleaved<rows = 8, chunk = 8>>'}}
  // expected-error @+1 {{failed to legalize operation 'graph.matmul'}}
  %0 = graph.matmul %x, %w {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<8x64x!graph.q8_0, #graph.interleaved<rows = 8, chunk = 8>> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}
