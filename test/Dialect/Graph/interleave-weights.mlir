// RUN: llm-opt %s -split-input-file -graph-interleave-weights="target=cpu:znver4" | FileCheck %s
// RUN: llm-opt %s -split-input-file -graph-interleave-weights="target=cpu:x86-64-v3" | FileCheck %s --check-prefix=AVX2
// RUN: not llm-opt %s -split-input-file -graph-interleave-weights="target=tpu" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: graph-interleave-weights: unknown target 'tpu'

// Q8_0, Q4_0, Q4_K and Q6_K matrices read only by llama.cpp-mode integer
// products get their rows interleaved, one row per i32 lane: 16 with
// AVX-512, 8 with AVX2; fewer when the row count asks (24 rows: 8; Q8_0's
// and Q6_K's 20 rows: 4, vec_dot's steps in any multiple of 4 rows),
// chunks of four bytes (one VPDPBUSD group). Both params named "a" change
// together.
// CHECK-LABEL: func.func @packed
// CHECK-COUNT-2: graph.param %{{.*}}["a"] : tensor<32x64x!graph.q4_0, #graph.interleaved<rows = 16, chunk = 4>>
// CHECK: graph.param %{{.*}}["b"] : tensor<24x64x!graph.q4_0, #graph.interleaved<rows = 8, chunk = 4>>
// CHECK: graph.param %{{.*}}["k"] : tensor<32x256x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>>
// CHECK: graph.param %{{.*}}["q8"] : tensor<32x64x!graph.q8_0, #graph.interleaved<rows = 16, chunk = 4>>
// CHECK: graph.param %{{.*}}["q8odd"] : tensor<20x64x!graph.q8_0, #graph.interleaved<rows = 4, chunk = 4>>
// CHECK: graph.param %{{.*}}["q6"] : tensor<32x256x!graph.q6_k, #graph.interleaved<rows = 16, chunk = 4>>
// CHECK: graph.param %{{.*}}["q6odd"] : tensor<20x256x!graph.q6_k, #graph.interleaved<rows = 4, chunk = 4>>
// AVX2-LABEL: func.func @packed
// AVX2-COUNT-2: graph.param %{{.*}}["a"] : tensor<32x64x!graph.q4_0, #graph.interleaved<rows = 8, chunk = 4>>
// AVX2: graph.param %{{.*}}["q8"] : tensor<32x64x!graph.q8_0, #graph.interleaved<rows = 8, chunk = 4>>
func.func @packed(%x: tensor<?x64xf32>, %y: tensor<?x256xf32>, %w: !graph.weights) -> (tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x24xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x20xf32>, tensor<?x32xf32>, tensor<?x20xf32>) {
  %a = graph.param %w["a"] : tensor<32x64x!graph.q4_0>
  %a2 = graph.param %w["a"] : tensor<32x64x!graph.q4_0>
  %b = graph.param %w["b"] : tensor<24x64x!graph.q4_0>
  %k = graph.param %w["k"] : tensor<32x256x!graph.q4_k>
  %0 = graph.matmul %x, %a {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<32x64x!graph.q4_0> -> tensor<?x32xf32>
  %1 = graph.matmul %x, %a2 {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<32x64x!graph.q4_0> -> tensor<?x32xf32>
  %2 = graph.matmul %x, %b {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<24x64x!graph.q4_0> -> tensor<?x24xf32>
  %3 = graph.matmul %y, %k {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<32x256x!graph.q4_k> -> tensor<?x32xf32>
  %q8 = graph.param %w["q8"] : tensor<32x64x!graph.q8_0>
  %4 = graph.matmul %x, %q8 {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<32x64x!graph.q8_0> -> tensor<?x32xf32>
  %q8odd = graph.param %w["q8odd"] : tensor<20x64x!graph.q8_0>
  %5 = graph.matmul %x, %q8odd {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<20x64x!graph.q8_0> -> tensor<?x20xf32>
  %q6 = graph.param %w["q6"] : tensor<32x256x!graph.q6_k>
  %6 = graph.matmul %y, %q6 {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<32x256x!graph.q6_k> -> tensor<?x32xf32>
  %q6odd = graph.param %w["q6odd"] : tensor<20x256x!graph.q6_k>
  %7 = graph.matmul %y, %q6odd {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<20x256x!graph.q6_k> -> tensor<?x20xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x24xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x20xf32>, tensor<?x32xf32>, tensor<?x20xf32>
}

// -----

// A tied output head: the table the embedding gathers from is also the
// weight of an integer product (params of one name are one tensor): it is
// interleaved for the product, and the gather reads the interleaved rows.
// CHECK-LABEL: func.func @tied
// CHECK: graph.param %{{.*}}["tied"] : tensor<32x64x!graph.q8_0, #graph.interleaved<rows = 16, chunk = 4>>
// CHECK-NEXT: graph.embedding %{{.*}} : tensor<32x64x!graph.q8_0, #graph.interleaved<rows = 16, chunk = 4>>
// CHECK: graph.param %{{.*}}["tied"] : tensor<32x64x!graph.q8_0, #graph.interleaved<rows = 16, chunk = 4>>
func.func @tied(%x: tensor<?x64xf32>, %ids: tensor<?xi32>, %w: !graph.weights) -> (tensor<?x64xf32>, tensor<?x32xf32>) {
  %t = graph.param %w["tied"] : tensor<32x64x!graph.q8_0>
  %e = graph.embedding %t[%ids] : tensor<32x64x!graph.q8_0>, tensor<?xi32> -> tensor<?x64xf32>
  %t2 = graph.param %w["tied"] : tensor<32x64x!graph.q8_0>
  %0 = graph.matmul %x, %t2 {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<32x64x!graph.q8_0> -> tensor<?x32xf32>
  return %e, %0 : tensor<?x64xf32>, tensor<?x32xf32>
}

// -----

// Left plain: a table only gathered from (no product to serve), one tied to
// a product in exact mode, a tied Q4_0 table (llama.cpp's product of a
// tied head runs vec_dot's steps, which the interleaved Q4_0/Q4_K
// products do not), products in exact mode (no act_type), a row
// count llama.cpp does not repack (not a multiple of 8: vec_dot's order of
// steps), Q8_0 and Q6_K matrices of rows not a multiple of 4.
// CHECK-LABEL: func.func @plain
// CHECK-NOT: interleaved
func.func @plain(%x: tensor<?x64xf32>, %y: tensor<?x256xf32>, %ids: tensor<?xi32>, %w: !graph.weights) -> (tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x20xf32>, tensor<?x30xf32>, tensor<?x30xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>) {
  %t = graph.param %w["tied"] : tensor<32x64x!graph.q4_0>
  %e = graph.embedding %t[%ids] : tensor<32x64x!graph.q4_0>, tensor<?xi32> -> tensor<?x64xf32>
  %t2 = graph.param %w["tied"] : tensor<32x64x!graph.q4_0>
  %0 = graph.matmul %x, %t2 : tensor<?x64xf32>, tensor<32x64x!graph.q4_0> -> tensor<?x32xf32>
  %g = graph.param %w["gathered"] : tensor<32x64x!graph.q8_0>
  %e2 = graph.embedding %g[%ids] : tensor<32x64x!graph.q8_0>, tensor<?xi32> -> tensor<?x64xf32>
  %t4 = graph.param %w["tied4"] : tensor<32x64x!graph.q4_0>
  %e3 = graph.embedding %t4[%ids] : tensor<32x64x!graph.q4_0>, tensor<?xi32> -> tensor<?x64xf32>
  %t5 = graph.param %w["tied4"] : tensor<32x64x!graph.q4_0>
  %5 = graph.matmul %x, %t5 {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<32x64x!graph.q4_0> -> tensor<?x32xf32>
  %ex = graph.param %w["exact"] : tensor<32x64x!graph.q4_0>
  %1 = graph.matmul %x, %ex : tensor<?x64xf32>, tensor<32x64x!graph.q4_0> -> tensor<?x32xf32>
  %odd = graph.param %w["odd"] : tensor<20x64x!graph.q4_0>
  %2 = graph.matmul %x, %odd {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<20x64x!graph.q4_0> -> tensor<?x20xf32>
  %q8 = graph.param %w["q8"] : tensor<30x64x!graph.q8_0>
  %3 = graph.matmul %x, %q8 {act_type = !graph.q8_0} : tensor<?x64xf32>, tensor<30x64x!graph.q8_0> -> tensor<?x30xf32>
  %q6 = graph.param %w["q6"] : tensor<30x256x!graph.q6_k>
  %4 = graph.matmul %y, %q6 {act_type = !graph.q8_k} : tensor<?x256xf32>, tensor<30x256x!graph.q6_k> -> tensor<?x30xf32>
  return %e, %0, %1, %2, %3, %4, %e2, %e3, %5 : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>, tensor<?x20xf32>, tensor<?x30xf32>, tensor<?x30xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32>
}
