// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={library(matmul, 1)}'

// What library refuses: a band inside a loop (the host calls the library
// outside any loop), and a band that is none.

func.func @nested(%a: memref<2x16x32xf16>, %b: memref<16x32xf16>, %y: memref<2x16x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %i = %c0 to %c2 step %c1 {
    // expected-error @+1 {{library: the band must be a whole nest at the top of its function}}
    tl.for %r = %c0 to %c16 step %c1 {
      tl.for %c = %c0 to %c16 step %c1 {
        tl.for %k = %c0 to %c32 step %c1 {
          tl.block "matmul" (%vi = spatial %i, %vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vi, %vr, %vk] : memref<2x16x32xf16>, %b[%vc, %vk] : memref<16x32xf16>, %y[%vi, %vr, %vc] : memref<2x16x16xf32>) writes(%y[%vi, %vr, %vc] : memref<2x16x16xf32>) init {
            affine.store %cst, %y[symbol(%vi), symbol(%vr), symbol(%vc)] : memref<2x16x16xf32>
          } {
            %0 = affine.load %a[symbol(%vi), symbol(%vr), symbol(%vk)] : memref<2x16x32xf16>
            %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
            %2 = arith.extf %0 : f16 to f32
            %3 = arith.extf %1 : f16 to f32
            %4 = affine.load %y[symbol(%vi), symbol(%vr), symbol(%vc)] : memref<2x16x16xf32>
            %5 = arith.mulf %2, %3 : f32
            %6 = arith.addf %4, %5 : f32
            affine.store %6, %y[symbol(%vi), symbol(%vr), symbol(%vc)] : memref<2x16x16xf32>
          }
        }
      }
    }
  }
  return
}

// -----

func.func @f32(%a: memref<16x32xf32>, %b: memref<16x32xf32>, %y: memref<16x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %q = %c0 to %c1 step %c1 {
  // expected-error @+1 {{library: the block must add the product of two f16 values widened to f32}}
  tl.for %r = %c0 to %c16 step %c1 {
    tl.for %c = %c0 to %c16 step %c1 {
      tl.for %k = %c0 to %c32 step %c1 {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x32xf32>, %b[%vc, %vk] : memref<16x32xf32>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) init {
          affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        } {
          %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x32xf32>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf32>
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          %5 = arith.mulf %0, %1 : f32
          %6 = arith.addf %4, %5 : f32
          affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        }
      }
    }
  }
  }
  return
}
