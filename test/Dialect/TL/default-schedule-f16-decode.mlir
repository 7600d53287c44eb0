// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s

// Decode's matmul over f16 weights (widened in registers, a VCVTPH2PS per
// vector): one row per step, its 64 lanes (4 vectors) of partials; an f32
// weight too (one stream); bf16 (VDPBF16PS on pairs) register tiles of 4
// rows.
// CHECK-LABEL: func.func @decode_f16
// CHECK: tl.block "matmul_rf_init"
// CHECK-SAME: memref<1x64xf32>
// CHECK-LABEL: func.func @decode_f32
// CHECK: tl.block "matmul_rf_init"
// CHECK-SAME: memref<1x64xf32>
// CHECK-LABEL: func.func @decode_bf16
// CHECK: tl.block "matmul_rf_init"
// CHECK-SAME: memref<4x64xf32>
func.func @decode_f16(%x: tensor<1x256xf32>, %w: tensor<64x256xf16>) -> tensor<1x64xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.matmul %x, %w : tensor<1x256xf32>, tensor<64x256xf16> -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}

func.func @decode_f32(%x: tensor<1x256xf32>, %w: tensor<64x256xf32>) -> tensor<1x64xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.matmul %x, %w : tensor<1x256xf32>, tensor<64x256xf32> -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}

func.func @decode_bf16(%x: tensor<1x256xf32>, %w: tensor<64x256xbf16>) -> tensor<1x64xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.matmul %x, %w : tensor<1x256xf32>, tensor<64x256xbf16> -> tensor<1x64xf32>
  return %0 : tensor<1x64xf32>
}
