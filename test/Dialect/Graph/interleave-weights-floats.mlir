// RUN: llm-opt %s -split-input-file -graph-interleave-weights="target=cpu:znver4 floats=true" | FileCheck %s
// RUN: llm-opt %s -split-input-file -graph-interleave-weights="target=cpu:x86-64-v3 floats=true" | FileCheck %s --check-prefix=AVX2

// The exact mode (floats): an f32 matrix that only f32 products (no
// act_type) read gets the elements of 4 vectors' rows side by side, 64 rows
// with AVX-512, 32 with AVX2 (a register tile's columns), fewer where the
// row count asks (96 rows: 32 with AVX-512, as 96 is no multiple of 64).
// Both params named "a" change together; f16 and bf16 matrices (their
// products widen the weight to f32) are interleaved the same way, their
// chunk one 2-byte element; the quantized matrix of an integer product
// stays as it is (that is the llama.cpp mode's layout).
// CHECK-LABEL: func.func @packed
// CHECK-COUNT-2: graph.param %{{.*}}["a"] : tensor<128x64xf32, #graph.interleaved<rows = 64, chunk = 4>>
// CHECK: graph.param %{{.*}}["b"] : tensor<96x64xf32, #graph.interleaved<rows = 32, chunk = 4>>
// CHECK: graph.param %{{.*}}["q"] : tensor<32x64x!graph.q8_0>
// CHECK: graph.param %{{.*}}["half"] : tensor<64x64xf16, #graph.interleaved<rows = 64, chunk = 2>>
// CHECK: graph.param %{{.*}}["brain"] : tensor<64x64xbf16, #graph.interleaved<rows = 64, chunk = 2>>
// AVX2-LABEL: func.func @packed
// AVX2-COUNT-2: graph.param %{{.*}}["a"] : tensor<128x64xf32, #graph.interleaved<rows = 32, chunk = 4>>
// AVX2: graph.param %{{.*}}["b"] : tensor<96x64xf32, #graph.interleaved<rows = 32, chunk = 4>>
func.func @packed(%x: tensor<?x64xf32>, %w: !graph.weights) -> (tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x96xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %a = graph.param %w["a"] : tensor<128x64xf32>
  %a2 = graph.param %w["a"] : tensor<128x64xf32>
  %b = graph.param %w["b"] : tensor<96x64xf32>
  %q = graph.param %w["q"] : tensor<32x64x!graph.q8_0>
  %0 = graph.matmul %x, %a : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %1 = graph.matmul %x, %a2 : tensor<?x64xf32>, tensor<128x64xf32> -> tensor<?x128xf32>
  %2 = graph.matmul %x, %b : tensor<?x64xf32>, tensor<96x64xf32> -> tensor<?x96xf32>
  %3 = graph.matmul %x, %q {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<32x64x!graph.q8_0> -> tensor<?x32xf32>
  %h = graph.param %w["half"] : tensor<64x64xf16>
  %4 = graph.matmul %x, %h : tensor<?x64xf32>, tensor<64x64xf16> -> tensor<?x64xf32>
  %bf = graph.param %w["brain"] : tensor<64x64xbf16>
  %5 = graph.matmul %x, %bf : tensor<?x64xf32>, tensor<64x64xbf16> -> tensor<?x64xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<?x128xf32>, tensor<?x128xf32>, tensor<?x96xf32>, tensor<?x32xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// A tied output head: the table the embedding gathers from is the weight
// of an f32 product; it is interleaved, and the gather reads its rows
// where the layout puts them.
// CHECK-LABEL: func.func @tied
// CHECK: graph.param %{{.*}}["tied"] : tensor<64x32xf32, #graph.interleaved<rows = 64, chunk = 4>>
// CHECK-NEXT: graph.embedding %{{.*}} : tensor<64x32xf32, #graph.interleaved<rows = 64, chunk = 4>>
func.func @tied(%x: tensor<?x32xf32>, %ids: tensor<?xi32>, %w: !graph.weights) -> (tensor<?x32xf32>, tensor<?x64xf32>) {
  %t = graph.param %w["tied"] : tensor<64x32xf32>
  %e = graph.embedding %t[%ids] : tensor<64x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %t2 = graph.param %w["tied"] : tensor<64x32xf32>
  %0 = graph.matmul %x, %t2 : tensor<?x32xf32>, tensor<64x32xf32> -> tensor<?x64xf32>
  return %e, %0 : tensor<?x32xf32>, tensor<?x64xf32>
}

// -----

// Left plain: a table only gathered from (no product to serve), rows not a
// multiple of one vector's (24 rows with AVX-512's 16 lanes), a matrix an
// elementwise op also reads, and the weights of products with an act_type
// (the llama.cpp mode's rounded activations, whose products keep ggml's
// lanes), f32 and f16.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: interleaved
func.func @plain(%x: tensor<?x64xf32>, %ids: tensor<?xi32>, %w: !graph.weights) -> (tensor<?x64xf32>, tensor<?x24xf32>, tensor<?x32xf32>, tensor<32x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>) {
  %g = graph.param %w["gathered"] : tensor<32x64xf32>
  %e = graph.embedding %g[%ids] : tensor<32x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %o = graph.param %w["odd"] : tensor<24x64xf32>
  %0 = graph.matmul %x, %o : tensor<?x64xf32>, tensor<24x64xf32> -> tensor<?x24xf32>
  %m = graph.param %w["mixed"] : tensor<32x64xf32>
  %1 = graph.matmul %x, %m : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  %2 = graph.add %m, %m : tensor<32x64xf32>, tensor<32x64xf32>
  %h = graph.param %w["half"] : tensor<32x64xf16>
  %3 = graph.matmul %x, %h {act_type = f16} : tensor<?x64xf32>, tensor<32x64xf16> -> tensor<?x32xf32>
  %r = graph.param %w["rounded"] : tensor<32x64xf32>
  %4 = graph.matmul %x, %r {act_type = f16} : tensor<?x64xf32>, tensor<32x64xf32> -> tensor<?x32xf32>
  return %e, %0, %1, %2, %3, %4 : tensor<?x64xf32>, tensor<?x24xf32>, tensor<?x32xf32>, tensor<32x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>
}
