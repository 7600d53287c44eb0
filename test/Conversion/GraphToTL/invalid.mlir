// RUN: llm-opt %s -convert-graph-to-tl -verify-diagnostics

func.func @no_offset(%w: !graph.weights) -> tensor<4xf32> {
  // expected-error @+2 {{parameter 'p' has no blob_offset; run graph-layout-weights first}}
  // expected-error @+1 {{failed to legalize operation 'graph.param'}}
  %0 = graph.param %w["p"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
