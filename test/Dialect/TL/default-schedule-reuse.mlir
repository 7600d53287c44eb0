// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" > %t.reuse
// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4 reuse=false" > %t.each
// RUN: diff %t.reuse %t.each
// RUN: FileCheck %s < %t.reuse

// The two layers' products are the same nest over other buffers: the
// schedule is made for the first and copied to the second, which keeps its
// own buffers and its blocks' own names (the blocks the schedule adds are
// named after them); the result is what scheduling each nest on its own
// gives (the diff above). The third product, of another shape, gets a
// schedule of its own.
// CHECK-LABEL: func.func @layers
// CHECK: %[[W1:.+]] = memref.view %{{.+}}[%c0{{.*}}][] : memref<?xi8> to memref<64x256xf32>
// CHECK: %[[W2:.+]] = memref.view %{{.+}}[%c65536{{.*}}][] : memref<?xi8> to memref<64x256xf32>
// CHECK: %[[W3:.+]] = memref.view %{{.+}}[%c131072{{.*}}][] : memref<?xi8> to memref<32x256xf32>
// CHECK: tl.block "matmul_rf_init"
// CHECK: tl.block "matmul_rf" {{.*}}%[[W1]]
// CHECK: tl.block "matmul_1_rf_init"
// CHECK: tl.block "matmul_1_rf" {{.*}}%[[W2]]
// CHECK: tl.block "matmul_2_rf" {{.*}}%[[W3]]
func.func @layers(%x: tensor<1x256xf32>, %w: !graph.weights) -> (tensor<1x64xf32>, tensor<1x64xf32>, tensor<1x32xf32>) attributes {llmc.phase = "decode"} {
  %w1 = graph.param %w["w1"] {blob_offset = 0 : i64} : tensor<64x256xf32>
  %w2 = graph.param %w["w2"] {blob_offset = 65536 : i64} : tensor<64x256xf32>
  %w3 = graph.param %w["w3"] {blob_offset = 131072 : i64} : tensor<32x256xf32>
  %0 = graph.matmul %x, %w1 : tensor<1x256xf32>, tensor<64x256xf32> -> tensor<1x64xf32>
  %1 = graph.matmul %x, %w2 : tensor<1x256xf32>, tensor<64x256xf32> -> tensor<1x64xf32>
  %2 = graph.matmul %x, %w3 : tensor<1x256xf32>, tensor<32x256xf32> -> tensor<1x32xf32>
  return %0, %1, %2 : tensor<1x64xf32>, tensor<1x64xf32>, tensor<1x32xf32>
}
