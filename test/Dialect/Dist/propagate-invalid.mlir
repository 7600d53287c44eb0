// RUN: llm-opt %s -dist-propagate -verify-diagnostics

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
