// RUN: llm-opt %s -split-input-file -dist-propagate -verify-diagnostics

// One mesh per function.
dist.mesh @a shape [2] axes ["tp"]
dist.mesh @b shape [2] axes ["tp"]
func.func @two_meshes(%x: tensor<4xf32>) {
  // expected-note @+1 {{the first}}
  %0 = dist.shard %x to <@a, [["tp"]]> : tensor<4xf32>
  // expected-error @+1 {{shardings on two meshes in one function (@a and @b)}}
  %1 = dist.shard %x to <@b, [["tp"]]> : tensor<4xf32>
  return
}

// -----

dist.mesh @m shape [2] axes ["tp"]
// expected-error @+1 {{argument 0 has a sharding but is not a ranked tensor}}
func.func @not_a_tensor(%w: !graph.weights {dist.sharding = #dist.sharding<@m, [["tp"]]>}) {
  return
}

// -----

dist.mesh @m shape [4] axes ["tp"]
// expected-error @+1 {{dimension 0 (6) does not split evenly over the 4 ranks of its axes}}
func.func @uneven_argument(%x: tensor<6xf32> {dist.sharding = #dist.sharding<@m, [["tp"]]>}) {
  %0 = dist.shard %x to <@m, [[]]> : tensor<6xf32>
  return
}
