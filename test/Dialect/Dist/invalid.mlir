// RUN: llm-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'dist.mesh' op has 2 axis sizes but 1 axis names}}
dist.mesh @m shape [2, 2] axes ["tp"]

// -----

// expected-error @+1 {{axis 'tp' must have a positive number of ranks, got 0}}
dist.mesh @m shape [0] axes ["tp"]

// -----

// expected-error @+1 {{names axis 'tp' twice}}
dist.mesh @m shape [2, 2] axes ["tp", "tp"]

// -----

// expected-error @+1 {{has 1 links for 2 axes}}
dist.mesh @m shape [2, 2] axes ["pp", "tp"] links [#dist.link<bandwidth = 1.0e9, latency = 0.0>]

// -----

// expected-error @+1 {{a link's bandwidth must be a positive number of bytes per second}}
dist.mesh @m shape [2] axes ["tp"] links [#dist.link<bandwidth = 0.0, latency = 0.0>]

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @twice(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{sharding names mesh axis 'tp' more than once}}
  %0 = dist.shard %x to <@m, [["tp"], ["tp"]]> : tensor<4x4xf32>
  return
}

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @split_and_partial(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{sharding names mesh axis 'tp' more than once}}
  %0 = dist.shard %x to <@m, [["tp"], []], partial = ["tp"]> : tensor<4x4xf32>
  return
}

// -----

func.func @no_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{refers to @nowhere, which is not a dist.mesh}}
  %0 = dist.shard %x to <@nowhere, [[]]> : tensor<4xf32>
  return
}

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @rank(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{sharding has 1 dimensions for a tensor of rank 2}}
  %0 = dist.shard %x to <@m, [["tp"]]> : tensor<4x4xf32>
  return
}

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @unknown_axis(%x: tensor<4xf32>) {
  // expected-error @+1 {{sharding names axis 'pp', which mesh @m does not have}}
  %0 = dist.shard %x to <@m, [["pp"]]> : tensor<4xf32>
  return
}

// -----

dist.mesh @m shape [4] axes ["tp"]
func.func @uneven(%x: tensor<6x8xf32>) {
  // expected-error @+1 {{dimension 0 (6) does not split evenly over the 4 ranks of its axes}}
  %0 = dist.shard %x to <@m, [["tp"], []]> : tensor<6x8xf32>
  return
}

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @no_axes(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{needs at least one mesh axis}}
  %0 = dist.all_reduce %x on @m axes [] : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @gather_shape(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{result dimension 1 must be 16, got 8}}
  %0 = dist.all_gather %x on @m axes ["tp"] gather_axis = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @gather_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{gather_axis 2 is not a dimension of 'tensor<4x8xf32>'}}
  %0 = dist.all_gather %x on @m axes ["tp"] gather_axis = 2 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

dist.mesh @m shape [4] axes ["tp"]
func.func @scatter_uneven(%x: tensor<4x6xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{dimension 1 (6) does not split into 4 pieces}}
  %0 = dist.reduce_scatter %x on @m axes ["tp"] scatter_axis = 1 : tensor<4x6xf32> -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @all_to_all_type(%x: tensor<4x8xf32>) -> tensor<8x4xf16> {
  // expected-error @+1 {{must have the rank and element type of 'tensor<4x8xf32>'}}
  %0 = dist.all_to_all %x on @m axes ["tp"] split_axis = 1 concat_axis = 0 : tensor<4x8xf32> -> tensor<8x4xf16>
  return %0 : tensor<8x4xf16>
}

// -----

dist.mesh @m shape [2, 2] axes ["pp", "tp"]
func.func @peer(%x: tensor<4xf32>) {
  // expected-error @+1 {{peer position 2 is outside axis 'pp' of 2 ranks}}
  dist.send %x on @m axes ["pp"] to [2] : tensor<4xf32>
  return
}

// -----

dist.mesh @m shape [2, 2] axes ["pp", "tp"]
func.func @peer_arity(%x: tensor<4xf32>) {
  // expected-error @+1 {{peer has 1 positions for 2 axes}}
  dist.send %x on @m axes ["pp", "tp"] to [1] : tensor<4xf32>
  return
}

// -----

dist.mesh @m shape [2] axes ["pp"]
func.func @recv_sizes() -> tensor<?x4xf32> {
  // expected-error @+1 {{needs a size for each of the result's 1 dynamic dimensions, got 0}}
  %0 = dist.recv on @m axes ["pp"] from [0] : tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

dist.mesh @m shape [2] axes ["tp"]
func.func @collective_axis_twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{the collective names axis 'tp' more than once}}
  %0 = dist.all_reduce %x on @m axes ["tp", "tp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
