// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4,prefetch=0" | FileCheck %s --check-prefix=OFF
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4,prefetch=4K,prefetch_level=1" | FileCheck %s --check-prefix=NEAR
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4 tuning=matmul.decode.w768x768.f32=r2c2p16;matmul.decode.w128x6912.i8=r2c2p0;matmul.decode.w768x2048.f16=r2c2p4" | FileCheck %s --check-prefix=TUNED
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4 tuning=matmul.decode.w768x768.f32=r2c2p0t1" | FileCheck %s --check-prefix=ONEROW
// RUN: llm-opt %s -split-input-file -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4 tuning=matmul.decode.w768x768.f32=r2c2p16t4" | FileCheck %s --check-prefix=FOUR

// Decode streams every weight from memory: the loop over an interleaved
// Q4_K weight's super-blocks (each iteration the 16 rows' 2304 bytes, the
// next iteration the next 2304: row group g's block b at (3 g + b) * 2304)
// fetches the target's prefetch distance ahead (8 KiB by default), one
// run per iteration; nothing else in the nest is a stream (the
// activations are 3 KiB, fewer than 4 distances). The run's 36 lines are
// spread over the 2 x 2 x 2 unrolled iterations of the products' first
// loops, 5 lines (320 bytes) each, among the products rather than all
// at once before them.
// CHECK: #[[STREAM:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0 * 2304 + d1 * 6912 + ((d2 * 2 + d3) * 2 + d4) * 320)>
// CHECK-LABEL: func.func @decode_q4_k
// CHECK: tl.for %[[G:.+]] = %{{.+}} to %c128 step %{{.+}} kind(parallel)
// CHECK: tl.for %[[B:.+]] = %{{.+}} to %c3 step
// CHECK: tl.for %[[U0:.+]] = %{{.+}} to %c2 step %{{.+}} kind(unrolled)
// CHECK-NEXT: tl.for %[[U1:.+]] = %{{.+}} to %c2 step %{{.+}} kind(unrolled)
// CHECK-NEXT: tl.for %[[U2:.+]] = %{{.+}} to %c2 step %{{.+}} kind(unrolled)
// CHECK-NEXT: %[[AT:.+]] = affine.apply #[[STREAM]](%[[B]], %[[G]], %[[U0]], %[[U1]], %[[U2]])
// CHECK-NEXT: tl.prefetch %{{.+}}[%[[AT]]] {bytes = 320 : i64, distance = 8192 : i64, level = 2 : i64, line = 64 : i64} : memref<128x6912xi8>
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step
// CHECK-NOT: tl.prefetch
// OFF-LABEL: func.func @decode_q4_k
// OFF-NOT: tl.prefetch
// Tuned (`llmc tune`): a decode nest's key is its weight's buffer; its
// choice's p<KiB> is the distance, p0 none; t<T> the rows of a dense
// weight a step of the GEMV reads (t1: one row, one stream).
// TUNED-LABEL: func.func @decode_q4_k
// TUNED: kind(parallel) attributes {llmc.tune = "matmul.decode.w128x6912.i8"}
// TUNED-NOT: tl.prefetch
// NEAR-LABEL: func.func @decode_q4_k
// NEAR: tl.prefetch {{.*}} {bytes = 320 : i64, distance = 4096 : i64, level = 1 : i64, line = 64 : i64}
func.func @decode_q4_k(%x: tensor<1x768xf32>, %w: !graph.weights) -> tensor<1x2048xf32> attributes {llmc.phase = "decode"} {
  %k = graph.param %w["k"] {blob_offset = 0 : i64} : tensor<2048x768x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %k {act_type = !graph.q8_k} : tensor<1x768xf32>, tensor<2048x768x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<1x2048xf32>
  return %0 : tensor<1x2048xf32>
}

// -----

// The prompt reads each row group's blocks once per token, from the cache
// (weights stationary): no prefetch.
// CHECK-LABEL: func.func @prefill_q4_k
// CHECK-NOT: tl.prefetch
func.func @prefill_q4_k(%x: tensor<?x768xf32>, %w: !graph.weights) -> tensor<?x2048xf32> attributes {llmc.phase = "prefill"} {
  %k = graph.param %w["k"] {blob_offset = 0 : i64} : tensor<2048x768x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %k {act_type = !graph.q8_k} : tensor<?x768xf32>, tensor<2048x768x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<?x2048xf32>
  return %0 : tensor<?x2048xf32>
}

// -----

// A weight smaller than 4 distances (32 rows: 18 KiB) ends before a
// prefetch would pay.
// CHECK-LABEL: func.func @decode_small
// CHECK-NOT: tl.prefetch
func.func @decode_small(%x: tensor<1x768xf32>, %w: !graph.weights) -> tensor<1x32xf32> attributes {llmc.phase = "decode"} {
  %k = graph.param %w["k"] {blob_offset = 0 : i64} : tensor<32x768x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>>
  %0 = graph.matmul %x, %k {act_type = !graph.q8_k} : tensor<1x768xf32>, tensor<32x768x!graph.q4_k, #graph.interleaved<rows = 16, chunk = 4>> -> tensor<1x32xf32>
  return %0 : tensor<1x32xf32>
}

// -----

// f32 weights in decode: one row per step of the GEMV, one stream. Into
// L2 (the default level) the reduction's loop over the row fetches the
// distance ahead, 256 bytes an iteration; into L1 (level 1) it is left to
// the hardware's prefetcher (on znver4 prefetches into L1 took fill
// buffers from the row's loads, and 4-row tiles, 4 streams, left a core at
// half the read bandwidth, with or without them). `llmc tune` may choose
// otherwise per weight: t4 steps 4 rows at a time, whose reduction loop
// reads 4 runs a row apart, so the parallel loop over the tiles of rows
// (one 12 KiB run per iteration, consecutive per thread) fetches its
// distance ahead; p0 none.
// CHECK: #[[ROW:.+]] = affine_map<(d0, d1) -> (d0 * 64 + d1 * 768)>
// CHECK-LABEL: func.func @decode_f32
// CHECK: tl.for %[[R:.+]] = %{{.+}} to %c768{{.*}} kind(parallel)
// CHECK-NEXT: memref.alloca() {{.*}} : memref<1x64xf32>
// CHECK: tl.for %[[K:.+]] = %{{.+}} to %c12
// CHECK-NEXT: %[[AT:.+]] = affine.apply #[[ROW]](%[[K]], %[[R]])
// CHECK-NEXT: tl.prefetch %{{.+}}[%[[AT]]] {bytes = 256 : i64, distance = 8192 : i64, level = 2 : i64, line = 64 : i64} : memref<768x768xf32>
// CHECK-NOT: tl.prefetch
// NEAR-LABEL: func.func @decode_f32
// NEAR-NOT: tl.prefetch
// OFF-LABEL: func.func @decode_f32
// OFF-NOT: tl.prefetch
// ONEROW-LABEL: func.func @decode_f32
// ONEROW: tl.for %{{.+}} = %{{.+}} to %c768{{.*}} kind(parallel) attributes {llmc.tune = "matmul.decode.w768x768.f32"}
// ONEROW-NEXT: memref.alloca() {{.*}} : memref<1x64xf32>
// ONEROW-NOT: tl.prefetch
// TUNED-LABEL: func.func @decode_f32
// TUNED: kind(parallel) attributes {llmc.tune = "matmul.decode.w768x768.f32"}
// TUNED: tl.for %{{.+}} = %{{.+}} to %c12
// TUNED-NEXT: affine.apply
// TUNED-NEXT: tl.prefetch {{.*}} {bytes = 256 : i64, distance = 16384 : i64, level = 2 : i64, line = 64 : i64}
// FOUR: #[[TILE:.+]] = affine_map<(d0) -> (d0 * 3072)>
// FOUR-LABEL: func.func @decode_f32
// FOUR: tl.for %[[T:.+]] = %{{.+}} to %c192 step %{{.+}} kind(parallel)
// FOUR-NEXT: %[[AT:.+]] = affine.apply #[[TILE]](%[[T]])
// FOUR-NEXT: tl.prefetch %{{.+}}[%[[AT]]] {bytes = 12288 : i64, distance = 16384 : i64, level = 2 : i64, line = 64 : i64} : memref<768x768xf32>
// FOUR-NEXT: memref.alloca() {{.*}} : memref<4x64xf32>
// FOUR-NOT: tl.prefetch
func.func @decode_f32(%x: tensor<1x768xf32>, %w: !graph.weights) -> tensor<1x768xf32> attributes {llmc.phase = "decode"} {
  %k = graph.param %w["k"] {blob_offset = 0 : i64} : tensor<768x768xf32>
  %0 = graph.matmul %x, %k : tensor<1x768xf32>, tensor<768x768xf32> -> tensor<1x768xf32>
  return %0 : tensor<1x768xf32>
}

// -----

// f16 weights too: one row per step, one stream, fetched ahead into L2
// (on Emerald Rapids 1.2-1.4x faster decode), not into L1 (on znver4 that
// cost f16 decode 1.25x); `llmc tune` may choose another distance.
// CHECK-LABEL: func.func @decode_f16
// CHECK: tl.prefetch {{.*}} {bytes = 128 : i64, distance = 8192 : i64, level = 2 : i64, line = 64 : i64} : memref<768x2048xf16>
// CHECK-NOT: tl.prefetch
// NEAR-LABEL: func.func @decode_f16
// NEAR-NOT: tl.prefetch
// ONEROW-LABEL: func.func @decode_f16
// FOUR-LABEL: func.func @decode_f16
// TUNED-LABEL: func.func @decode_f16
// TUNED: kind(parallel) attributes {llmc.tune = "matmul.decode.w768x2048.f16"}
// TUNED: tl.prefetch {{.*}} {bytes = 128 : i64, distance = 4096 : i64, level = 2 : i64, line = 64 : i64} : memref<768x2048xf16>
func.func @decode_f16(%x: tensor<1x2048xf32>, %w: !graph.weights) -> tensor<1x768xf32> attributes {llmc.phase = "decode"} {
  %k = graph.param %w["k"] {blob_offset = 0 : i64} : tensor<768x2048xf16>
  %0 = graph.matmul %x, %k : tensor<1x2048xf32>, tensor<768x2048xf16> -> tensor<1x768xf32>
  return %0 : tensor<1x768xf32>
}
