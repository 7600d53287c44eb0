// RUN: llm-opt %s -graph-layout-weights -split-input-file -verify-diagnostics

func.func @conflict(%w: !graph.weights) {
  %0 = graph.param %w["p"] : tensor<4xf32>
  // expected-error @+1 {{parameter 'p' is used with types 'tensor<4xf32>' and 'tensor<8xf32>'}}
  %1 = graph.param %w["p"] : tensor<8xf32>
  return
}
