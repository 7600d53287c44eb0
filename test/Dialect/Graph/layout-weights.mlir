// RUN: llm-opt %s -graph-layout-weights | FileCheck %s
// RUN: llm-opt %s -graph-layout-weights=alignment=4096 | FileCheck %s --check-prefix=PAGE

// Offsets follow first use, aligned to 64 bytes; a repeated name (a tied
// classifier) shares its first offset; the blob size is recorded.
// CHECK: module attributes {graph.weights_bytes = 384 : i64}
// PAGE: module attributes {graph.weights_bytes = 12288 : i64}
// CHECK-LABEL: func.func @tied
func.func @tied(%w: !graph.weights) -> (tensor<10x4xf32>, tensor<3xf32>, tensor<10x4xf32>) {
  // CHECK: graph.param %{{.*}}["emb"] {blob_offset = 0 : i64}
  // PAGE: ["emb"] {blob_offset = 0 : i64}
  %0 = graph.param %w["emb"] : tensor<10x4xf32>
  // 160 bytes, rounded up to 192.
  // CHECK: graph.param %{{.*}}["bias"] {blob_offset = 192 : i64}
  // PAGE: ["bias"] {blob_offset = 4096 : i64}
  %1 = graph.param %w["bias"] : tensor<3xf32>
  // CHECK: graph.param %{{.*}}["emb"] {blob_offset = 0 : i64}
  %2 = graph.param %w["emb"] : tensor<10x4xf32>
  // CHECK: graph.param %{{.*}}["head"] {blob_offset = 256 : i64}
  // PAGE: ["head"] {blob_offset = 8192 : i64}
  %3 = graph.param %w["head"] : tensor<8x4xf32>
  return %0, %1, %2 : tensor<10x4xf32>, tensor<3xf32>, tensor<10x4xf32>
}
