// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=2,l2=64K" | FileCheck %s --check-prefix=CHUNKS
// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=4,l2=64K" | FileCheck %s --check-prefix=TOKENS
// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=2,l2=1M" | FileCheck %s --check-prefix=FITS
// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4,cores=2,l2=1M,l1d=2K" | FileCheck %s --check-prefix=BLOCKED

// A prefill matmul whose weight (64 rows x 256 f32, 64 KiB) does not fit in
// half the L2 cache: its rows go in chunks of 32 (2 x 16 tiles of 4 rows,
// 32 KiB) outside the tiles of tokens, each chunk read from memory once and
// then by every tile of tokens from the cache. The chunks are the threads'
// when there are at least as many as cores, else the tokens stay theirs; a
// weight that fits keeps tokens outermost.
// CHUNKS-LABEL: func.func @prefill
// CHUNKS: tl.for %{{.+}} = %{{.+}} to %c2 step %{{.+}} kind(parallel)
// CHUNKS-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} {
// CHUNKS-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step
// CHUNKS: tl.block "matmul_rf"
// TOKENS-LABEL: func.func @prefill
// TOKENS: tl.for %{{.+}} = %{{.+}} to %c2 step %{{.+}} {
// TOKENS-NEXT: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} kind(parallel)
// TOKENS-NEXT: tl.for %{{.+}} = %{{.+}} to %c8 step
// FITS-LABEL: func.func @prefill
// FITS: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} kind(parallel)
// FITS-NOT: tl.for
// FITS: tl.for %{{.+}} = %{{.+}} to %c16 step
// A tile of 4 tokens' activations over the whole reduction (4 x 256 f32,
// 4 KiB) that would not stay in half the L1 cache: the reduction in blocks
// of 4 steps of 16 lanes (1 KiB of activations), each read by all 16 tiles
// of rows, whose partials wait in a buffer outside the blocks (one register
// tile each; the tiles of rows stay a loop around the steps).
// BLOCKED-LABEL: func.func @prefill
// BLOCKED: tl.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} kind(parallel)
// BLOCKED: memref.alloca() {{.*}} : memref<16x4x4x16xf32>
// BLOCKED: tl.block "matmul_rf_init"
// BLOCKED: tl.for %{{.+}} = %{{.+}} to %c4{{.*}} step %{{[^ ]+}} {
// BLOCKED-NEXT: tl.for %{{.+}} = %{{.+}} to %c16{{.*}} step %{{[^ ]+}} {
// BLOCKED-NEXT: tl.for %{{.+}} = %{{.+}} to %c4{{.*}} step %{{[^ ]+}} {
// BLOCKED-NEXT: tl.for %{{.+}} kind(unrolled)
// BLOCKED-NEXT: tl.for %{{.+}} kind(unrolled)
// BLOCKED-NEXT: tl.for %{{.+}} kind(vectorized)
// BLOCKED: tl.block "matmul_rf"
// BLOCKED: tl.block "matmul_tree0"
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
}
