// RUN: llm-opt %s -tl-default-schedule="target=cuda:sm_90" -tl-verify-parallel | FileCheck %s
// RUN: llm-opt %s -tl-default-schedule="target=vulkan:1.3,subgroup=32" | FileCheck %s --check-prefix=VULKAN
// RUN: llm-opt %s -tl-default-schedule="target=cuda:sm_90,range=64K" | FileCheck %s --check-prefix=VULKAN

// A decode product of an f16 weight on CUDA, whose threads load 16 bytes at
// once: each lane takes 8 consecutive elements of the row (a vectorized
// loop of 8 inside the lanes' loop, its products summed as a group), the
// 1024 elements 128 vectors over 64 lanes, two rows a workgroup (so that
// each lane has 4 vectors to read).
// CHECK-LABEL: func.func @decode
// CHECK: tl.for {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.for {{.*}} to %c8{{.*}} step %c1{{.*}} kind(vectorized)
// CHECK: tl.block "matmul_rf_rf"
// Vulkan's kernels do not lower vector loads: one element a lane, as before;
// nor a weight past the target's range (128 KiB here past 64K), which the
// kernel ABI binds in windows and reads element by element.
// VULKAN-LABEL: func.func @decode
// VULKAN-NOT: kind(vectorized)
// VULKAN: return
func.func @decode(%x: memref<1x1024xf32>, %w: memref<64x1024xf16>, %y: memref<1x64xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  tl.for %o = %c0 to %c64 step %c1 {
    tl.for %i = %c0 to %c1024 step %c1 {
      tl.block "matmul" (%vo = spatial %o, %vi = reduce %i) reads(%x[0, %vi] : memref<1x1024xf32>, %w[%vo, %vi] : memref<64x1024xf16>, %y[0, %vo] : memref<1x64xf32>) writes(%y[0, %vo] : memref<1x64xf32>) init {
        affine.store %cst, %y[0, symbol(%vo)] : memref<1x64xf32>
      } {
        %0 = affine.load %x[0, symbol(%vi)] : memref<1x1024xf32>
        %1 = affine.load %w[symbol(%vo), symbol(%vi)] : memref<64x1024xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %y[0, symbol(%vo)] : memref<1x64xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %y[0, symbol(%vo)] : memref<1x64xf32>
      }
    }
  }
  return
}
