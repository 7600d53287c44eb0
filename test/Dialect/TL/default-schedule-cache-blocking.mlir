// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=2,l2=64K" | FileCheck %s --check-prefix=CHUNKS
// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=3,l2=64K" | FileCheck %s --check-prefix=TOKENS
// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=4,l2=64K" | FileCheck %s --check-prefix=EVEN
// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=2,l2=1M" | FileCheck %s --check-prefix=FITS
// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=2,l2=256K,l1d=48K" | FileCheck %s --check-prefix=BLOCKED
// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=2,l2=256K,l1d=48K tuning=matmul.prefill.k2048.n64.f32=r0c2" | FileCheck %s --check-prefix=TUNED

// A prefill matmul whose weight (64 rows x 256 f32, 64 KiB) does not fit in
// half the L2 cache: its rows go in chunks of 32 (2 x 16 tiles of 4 rows,
// 32 KiB) outside the tiles of tokens, each chunk read from memory once and
// then by every tile of tokens from the cache. The chunks are the threads'
// when there are at least as many as cores, else the tokens stay theirs; a
// weight that fits keeps tokens outermost. The chunks' count is a multiple
// of the cores where a chunk of at least half the largest allows it: 4
// cores take 4 chunks of 16 rows; 3 cores, which no such count fits, leave
// the 2 chunks serial.
// CHUNKS-LABEL: func.func @prefill
// CHUNKS: tl.for %{{.+}} = %{{.+}} to %c2 step %{{.+}} kind(parallel)
// CHUNKS-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHUNKS-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step
// CHUNKS: tl.block "matmul_rf"
// TOKENS-LABEL: func.func @prefill
// TOKENS: tl.for %{{.+}} = %{{.+}} to %c2 step %{{.+}} {
// TOKENS-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} kind(parallel)
// TOKENS-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step
// EVEN-LABEL: func.func @prefill
// EVEN: tl.for %{{.+}} = %{{.+}} to %c4{{(_[0-9]+)?}} step %{{.+}} kind(parallel)
// EVEN-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// EVEN-NEXT: tl.for %{{.+}} = %{{.+}} to %c4{{(_[0-9]+)?}} step
// FITS-LABEL: func.func @prefill
// FITS: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} kind(parallel)
// FITS-NOT: tl.for
// FITS: tl.for %{{.+}} = %{{.+}} to %c16 step
module {
  func.func @prefill(%arg0: memref<?x256xf32>, %arg1: memref<64x256xf32>) -> memref<?x64xf32> attributes {llmc.phase = "prefill"} {
    %cst = arith.constant 0.000000e+00 : f32
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?x256xf32>
    %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x64xf32>
    tl.for %arg2 = %c0 to %dim step %c1 {
      tl.for %arg3 = %c0 to %c64 step %c1 {
        tl.for %arg4 = %c0 to %c256 step %c1 {
          tl.block "matmul" (%arg5 = spatial %arg2, %arg6 = spatial %arg3, %arg7 = reduce %arg4) reads(%arg0[%arg5, %arg7] : memref<?x256xf32>, %arg1[%arg6, %arg7] : memref<64x256xf32>, %alloc[%arg5, %arg6] : memref<?x64xf32>) writes(%alloc[%arg5, %arg6] : memref<?x64xf32>) init {
            affine.store %cst, %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
          } {
            %0 = affine.load %arg0[symbol(%arg5), symbol(%arg7)] : memref<?x256xf32>
            %1 = affine.load %arg1[symbol(%arg6), symbol(%arg7)] : memref<64x256xf32>
            %2 = affine.load %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
            %3 = arith.mulf %0, %1 : f32
            %4 = arith.addf %2, %3 : f32
            affine.store %4, %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
          }
        }
      }
    }
    return %alloc : memref<?x64xf32>
  }

  // A tile of 4 tokens' activations over the whole reduction (4 x 2048
  // f32, 32 KiB) that would not stay in half the L1 cache: within each
  // chunk of rows (16 rows, 128 KiB of the weight: half the L2), the
  // reduction in 2 blocks of 64 steps of 16 lanes (16 KiB of activations),
  // each read by the chunk's 4 tiles of rows, whose partials wait in a
  // buffer outside the blocks (one register tile each, 4 KiB: at most
  // half of L1; the tiles of rows stay a loop around the steps). The
  // nest records its tuning key; a tuning that says r0 leaves the
  // reduction whole.
  // BLOCKED-LABEL: func.func @prefill_long
  // BLOCKED: tl.for %{{.+}} = %{{.+}} to %c4{{.*}} step %{{.+}} kind(parallel) attributes {llmc.tune = "matmul.prefill.k2048.n64.f32"}
  // BLOCKED: memref.alloca() {{.*}} : memref<4x4x4x16xf32>
  // BLOCKED: tl.block "matmul_rf_init"
  // BLOCKED: tl.for %{{.+}} = %{{.+}} to %c2{{.*}} step %{{[^ ]+}} {
  // BLOCKED-NEXT: tl.for %{{.+}} = %{{.+}} to %c4{{.*}} step %{{[^ ]+}} {
  // BLOCKED-NEXT: tl.for %{{.+}} = %{{.+}} to %c64{{.*}} step %{{[^ ]+}} {
  // BLOCKED-NEXT: tl.for %{{.+}} kind(unrolled)
  // BLOCKED-NEXT: tl.for %{{.+}} kind(unrolled)
  // BLOCKED-NEXT: tl.for %{{.+}} kind(vectorized)
  // BLOCKED: tl.block "matmul_rf"
  // BLOCKED: tl.block "matmul_tree0"
  // TUNED-LABEL: func.func @prefill_long
  // TUNED: attributes {llmc.tune = "matmul.prefill.k2048.n64.f32"}
  // TUNED: memref.alloca() {{.*}} : memref<4x4x16xf32>
  // TUNED-NOT: memref<4x4x4x16xf32>
  func.func @prefill_long(%arg0: memref<?x2048xf32>, %arg1: memref<64x2048xf32>) -> memref<?x64xf32> attributes {llmc.phase = "prefill"} {
    %cst = arith.constant 0.000000e+00 : f32
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c2048 = arith.constant 2048 : index
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?x2048xf32>
    %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x64xf32>
    tl.for %arg2 = %c0 to %dim step %c1 {
      tl.for %arg3 = %c0 to %c64 step %c1 {
        tl.for %arg4 = %c0 to %c2048 step %c1 {
          tl.block "matmul" (%arg5 = spatial %arg2, %arg6 = spatial %arg3, %arg7 = reduce %arg4) reads(%arg0[%arg5, %arg7] : memref<?x2048xf32>, %arg1[%arg6, %arg7] : memref<64x2048xf32>, %alloc[%arg5, %arg6] : memref<?x64xf32>) writes(%alloc[%arg5, %arg6] : memref<?x64xf32>) init {
            affine.store %cst, %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
          } {
            %0 = affine.load %arg0[symbol(%arg5), symbol(%arg7)] : memref<?x2048xf32>
            %1 = affine.load %arg1[symbol(%arg6), symbol(%arg7)] : memref<64x2048xf32>
            %2 = affine.load %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
            %3 = arith.mulf %0, %1 : f32
            %4 = arith.addf %2, %3 : f32
            affine.store %4, %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
          }
        }
      }
    }
    return %alloc : memref<?x64xf32>
  }

  // 96 rows (24 tiles of 4): the largest chunk within half the L2 is 8
  // tiles, 3 chunks, which 2 threads would share 2 to 1 (one idle a third
  // of the time); 4 chunks of 6 tiles share evenly.
  // CHUNKS-LABEL: func.func @prefill_odd
  // CHUNKS: tl.for %{{.+}} = %{{.+}} to %c4{{(_[0-9]+)?}} step %{{.+}} kind(parallel)
  // CHUNKS-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
  // CHUNKS-NEXT: tl.for %{{.+}} = %{{.+}} to %c6{{(_[0-9]+)?}} step
  // CHUNKS: tl.block "matmul_rf"
  func.func @prefill_odd(%arg0: memref<?x256xf32>, %arg1: memref<96x256xf32>) -> memref<?x96xf32> attributes {llmc.phase = "prefill"} {
    %cst = arith.constant 0.000000e+00 : f32
    %c1 = arith.constant 1 : index
    %c96 = arith.constant 96 : index
    %c256 = arith.constant 256 : index
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?x256xf32>
    %alloc = memref.alloc(%dim) {alignment = 64 : i64} : memref<?x96xf32>
    tl.for %arg2 = %c0 to %dim step %c1 {
      tl.for %arg3 = %c0 to %c96 step %c1 {
        tl.for %arg4 = %c0 to %c256 step %c1 {
          tl.block "matmul" (%arg5 = spatial %arg2, %arg6 = spatial %arg3, %arg7 = reduce %arg4) reads(%arg0[%arg5, %arg7] : memref<?x256xf32>, %arg1[%arg6, %arg7] : memref<96x256xf32>, %alloc[%arg5, %arg6] : memref<?x96xf32>) writes(%alloc[%arg5, %arg6] : memref<?x96xf32>) init {
            affine.store %cst, %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x96xf32>
          } {
            %0 = affine.load %arg0[symbol(%arg5), symbol(%arg7)] : memref<?x256xf32>
            %1 = affine.load %arg1[symbol(%arg6), symbol(%arg7)] : memref<96x256xf32>
            %2 = affine.load %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x96xf32>
            %3 = arith.mulf %0, %1 : f32
            %4 = arith.addf %2, %3 : f32
            affine.store %4, %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x96xf32>
          }
        }
      }
    }
    return %alloc : memref<?x96xf32>
  }
}
