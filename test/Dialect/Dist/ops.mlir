// RUN: llm-opt %s | llm-opt | FileCheck %s

// Meshes, shardings and every collective print and parse back (twice, so
// that the printed form is itself valid); defaults (a sum) are not printed.

// CHECK: dist.mesh @tp2 shape [2] axes ["tp"]
// CHECK: dist.mesh @grid shape [2, 2] axes ["pp", "tp"] links [#dist.link<bandwidth = 1.000000e+10, latency = 2.000000e-05>, #dist.link<bandwidth = 2.000000e+11, latency = 5.000000e-06>]
dist.mesh @tp2 shape [2] axes ["tp"]
dist.mesh @grid shape [2, 2] axes ["pp", "tp"]
    links [#dist.link<bandwidth = 1.0e10, latency = 2.0e-05>,
           #dist.link<bandwidth = 2.0e11, latency = 5.0e-06>]

// CHECK-LABEL: func.func @megatron_mlp
// CHECK: dist.shard %{{.*}} to <@tp2, {{\[\[}}"tp"], []]> : tensor<3072x1024xf16>
// CHECK: dist.shard %{{.*}} to <@tp2, {{\[\[}}], ["tp"]]> : tensor<1024x3072xf16>
// CHECK: dist.shard %{{.*}} to <@tp2, {{\[\[}}], []], partial = ["tp"]> : tensor<?x1024xf32>
// CHECK: dist.all_reduce %{{.*}} on @tp2 axes ["tp"] : tensor<?x1024xf32>
// CHECK: dist.all_reduce %{{.*}} on @tp2 axes ["tp"] reduction <max> : tensor<?x1xf32>
func.func @megatron_mlp(%up: tensor<3072x1024xf16>, %down: tensor<1024x3072xf16>,
                        %p: tensor<?x1024xf32>, %m: tensor<?x1xf32>) -> (tensor<?x1024xf32>, tensor<?x1xf32>) {
  %0 = dist.shard %up to <@tp2, [["tp"], []]> : tensor<3072x1024xf16>
  %1 = dist.shard %down to <@tp2, [[], ["tp"]]> : tensor<1024x3072xf16>
  %2 = dist.shard %p to <@tp2, [[], []], partial = ["tp"]> : tensor<?x1024xf32>
  %3 = dist.all_reduce %2 on @tp2 axes ["tp"] reduction <sum> : tensor<?x1024xf32>
  %4 = dist.all_reduce %m on @tp2 axes ["tp"] reduction <max> : tensor<?x1xf32>
  return %3, %4 : tensor<?x1024xf32>, tensor<?x1xf32>
}

// CHECK-LABEL: func.func @collectives
// CHECK: dist.all_gather %{{.*}} on @grid axes ["tp"] gather_axis = 1 : tensor<?x8xf32> -> tensor<?x16xf32>
// CHECK: dist.all_gather %{{.*}} on @grid axes ["pp", "tp"] gather_axis = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
// CHECK: dist.reduce_scatter %{{.*}} on @grid axes ["tp"] scatter_axis = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
// CHECK: dist.all_to_all %{{.*}} on @grid axes ["tp"] split_axis = 1 concat_axis = 0 : tensor<4x16xf32> -> tensor<8x8xf32>
// CHECK: dist.send %{{.*}} on @grid axes ["pp"] to [1] : tensor<?x8xf32>
// CHECK: dist.recv on @grid axes ["pp"] from [0] sizes(%{{.*}}) : tensor<?x8xf32>
// CHECK: dist.recv on @grid axes ["pp", "tp"] from [1, 0] : tensor<4xi32>
func.func @collectives(%a: tensor<?x8xf32>, %b: tensor<2x8xf32>, %c: tensor<8x16xf32>,
                       %d: tensor<4x16xf32>, %n: index) {
  %0 = dist.all_gather %a on @grid axes ["tp"] gather_axis = 1 : tensor<?x8xf32> -> tensor<?x16xf32>
  %1 = dist.all_gather %b on @grid axes ["pp", "tp"] gather_axis = 0 : tensor<2x8xf32> -> tensor<8x8xf32>
  %2 = dist.reduce_scatter %c on @grid axes ["tp"] scatter_axis = 1 : tensor<8x16xf32> -> tensor<8x8xf32>
  %3 = dist.all_to_all %d on @grid axes ["tp"] split_axis = 1 concat_axis = 0 : tensor<4x16xf32> -> tensor<8x8xf32>
  dist.send %a on @grid axes ["pp"] to [1] : tensor<?x8xf32>
  %4 = dist.recv on @grid axes ["pp"] from [0] sizes(%n) : tensor<?x8xf32>
  %5 = dist.recv on @grid axes ["pp", "tp"] from [1, 0] : tensor<4xi32>
  return
}

// Collectives are never removed, even when their results are unused.
// RUN: llm-opt %s -canonicalize -cse | FileCheck %s --check-prefix=KEEP
// KEEP-LABEL: func.func @collectives
// KEEP-COUNT-2: dist.all_gather
// KEEP: dist.reduce_scatter
// KEEP: dist.all_to_all
// KEEP: dist.send
// KEEP-COUNT-2: dist.recv

// A sharding as a discardable attribute (how propagation records a value's
// layout): the full form.
// CHECK-LABEL: func.func @annotated
// CHECK-SAME: dist.sharding = #dist.sharding<@tp2, {{\[\[}}], ["tp"]]>
func.func @annotated(%x: tensor<?x1024xf32> {dist.sharding = #dist.sharding<@tp2, [[], ["tp"]]>}) {
  return
}
