// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={dequant_halves(matmul)}'

// What dequant_halves refuses: an f16 weight (a matrix band takes it as it
// is), and activations that use the reduction's loops in another order than
// the weight's k.

func.func @loaded(%x: memref<16x32xf32>, %w: memref<16x32xf16>, %y: memref<16x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %t = %c0 to %c16 step %c1 {
    tl.for %o = %c0 to %c16 step %c1 {
      tl.for %k = %c0 to %c32 step %c1 {
        // expected-error @+1 {{dequant_halves: the weight is an f16 element already (a matrix band takes it as it is)}}
        tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vk = reduce %k) reads(%x[%vt, %vk] : memref<16x32xf32>, %w[%vo, %vk] : memref<16x32xf16>, %y[%vt, %vo] : memref<16x16xf32>) writes(%y[%vt, %vo] : memref<16x16xf32>) init {
          affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<16x16xf32>
        } {
          %0 = affine.load %x[symbol(%vt), symbol(%vk)] : memref<16x32xf32>
          %1 = affine.load %w[symbol(%vo), symbol(%vk)] : memref<16x32xf16>
          %2 = arith.extf %1 : f16 to f32
          %3 = arith.mulf %0, %2 : f32
          %4 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<16x16xf32>
          %5 = arith.addf %4, %3 : f32
          affine.store %5, %y[symbol(%vt), symbol(%vo)] : memref<16x16xf32>
        }
      }
    }
  }
  return
}

// -----

func.func @order(%x: memref<16x64xf32>, %w: memref<16x68xi8>, %y: memref<16x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %t = %c0 to %c16 step %c1 {
    tl.for %o = %c0 to %c16 step %c1 {
      tl.for %kb = %c0 to %c2 step %c1 {
        tl.for %ki = %c0 to %c32 step %c1 {
          // expected-error @+1 {{dequant_halves: a read of the block uses the reduction's variables other than as one index k of the weight's order}}
          tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vb = reduce %kb, %vi = reduce %ki) reads(%x[%vt, %vi * 2 + %vb] : memref<16x64xf32>, %w[%vo, %vb * 34 + %vi + 2] : memref<16x68xi8>, %w[%vo, %vb * 34] : memref<16x68xi8>, %y[%vt, %vo] : memref<16x16xf32>) writes(%y[%vt, %vo] : memref<16x16xf32>) init {
            affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<16x16xf32>
          } {
            %0 = affine.load %w[symbol(%vo), symbol(%vb) * 34] : memref<16x68xi8>
            %1 = arith.sitofp %0 : i8 to f32
            %2 = affine.load %w[symbol(%vo), symbol(%vb) * 34 + symbol(%vi) + 2] : memref<16x68xi8>
            %3 = arith.sitofp %2 : i8 to f32
            %4 = arith.mulf %1, %3 : f32
            %5 = affine.load %x[symbol(%vt), symbol(%vi) * 2 + symbol(%vb)] : memref<16x64xf32>
            %6 = arith.mulf %5, %4 : f32
            %7 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<16x16xf32>
            %8 = arith.addf %7, %6 : f32
            affine.store %8, %y[symbol(%vt), symbol(%vo)] : memref<16x16xf32>
          }
        }
      }
    }
  }
  return
}
