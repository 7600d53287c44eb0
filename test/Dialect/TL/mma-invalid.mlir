// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={mma(matmul, 0)}'

// What mma refuses, each with the condition that does not hold.

func.func @extent(%a: memref<24x32xf16>, %b: memref<16x32xf16>, %y: memref<24x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cr = arith.constant 24 : index
  %cc = arith.constant 16 : index
  %ck = arith.constant 32 : index
  // expected-error @+1 {{mma: each loop of a matrix band must run from 0 with step 1 to a constant multiple of 16}}
  tl.for %r = %c0 to %cr step %c1 {
    tl.for %c = %c0 to %cc step %c1 {
      tl.for %k = %c0 to %ck step %c1 {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<24x32xf16>, %b[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<24x16xf32>) writes(%y[%vr, %vc] : memref<24x16xf32>) init {
          affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<24x16xf32>
        } {
          %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<24x32xf16>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
          %2 = arith.extf %0 : f16 to f32
          %3 = arith.extf %1 : f16 to f32
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<24x16xf32>
          %5 = arith.mulf %2, %3 : f32
          %6 = arith.addf %4, %5 : f32
          affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<24x16xf32>
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
  %cr = arith.constant 16 : index
  %cc = arith.constant 16 : index
  %ck = arith.constant 32 : index
  // expected-error @+1 {{mma: the block must add the product of two f16 values widened to f32 (or two such products sharing one factor, the second scaled by 2^-11)}}
  tl.for %r = %c0 to %cr step %c1 {
    tl.for %c = %c0 to %cc step %c1 {
      tl.for %k = %c0 to %ck step %c1 {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x32xf32>, %b[%vc, %vk] : memref<16x32xf32>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) init {
          affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        } {
          %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x32xf32>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf32>
          %2 = arith.addf %0, %0 : f32
          %3 = arith.addf %1, %1 : f32
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          %5 = arith.mulf %2, %3 : f32
          %6 = arith.addf %4, %5 : f32
          affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        }
      }
    }
  }
  return
}

// -----

func.func @init(%a: memref<16x32xf16>, %b: memref<16x32xf16>, %y: memref<16x16xf32>) {
  %cst = arith.constant 1.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cr = arith.constant 16 : index
  %cc = arith.constant 16 : index
  %ck = arith.constant 32 : index
  // expected-error @+1 {{mma: the block's init must store 0, or another buffer's element, into its accumulator}}
  tl.for %r = %c0 to %cr step %c1 {
    tl.for %c = %c0 to %cc step %c1 {
      tl.for %k = %c0 to %ck step %c1 {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x32xf16>, %b[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) init {
          affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        } {
          %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x32xf16>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
          %2 = arith.extf %0 : f16 to f32
          %3 = arith.extf %1 : f16 to f32
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          %5 = arith.mulf %2, %3 : f32
          %6 = arith.addf %4, %5 : f32
          affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        }
      }
    }
  }
  return
}

// -----

func.func @lead(%a: memref<16x36xf16>, %b: memref<16x32xf16>, %y: memref<16x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cr = arith.constant 16 : index
  %cc = arith.constant 16 : index
  %ck = arith.constant 32 : index
  // expected-error @+1 {{mma: each operand's rows must have unit stride, a constant stride between them of a multiple of 16 bytes, and fragments starting at 32-byte multiples}}
  tl.for %r = %c0 to %cr step %c1 {
    tl.for %c = %c0 to %cc step %c1 {
      tl.for %k = %c0 to %ck step %c1 {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x36xf16>, %b[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) init {
          affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        } {
          %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x36xf16>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
          %2 = arith.extf %0 : f16 to f32
          %3 = arith.extf %1 : f16 to f32
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          %5 = arith.mulf %2, %3 : f32
          %6 = arith.addf %4, %5 : f32
          affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        }
      }
    }
  }
  return
}

// -----

func.func @transposed(%a: memref<32x16xf16>, %b: memref<16x32xf16>, %y: memref<16x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cr = arith.constant 16 : index
  %cc = arith.constant 16 : index
  %ck = arith.constant 32 : index
  // expected-error @+1 {{mma: the operands must be a[rows][k], b[columns][k] and out[rows][columns] in their last two dimensions, each index the band's loop plus an offset}}
  tl.for %r = %c0 to %cr step %c1 {
    tl.for %c = %c0 to %cc step %c1 {
      tl.for %k = %c0 to %ck step %c1 {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vk, %vr] : memref<32x16xf16>, %b[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) init {
          affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        } {
          %0 = affine.load %a[symbol(%vk), symbol(%vr)] : memref<32x16xf16>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
          %2 = arith.extf %0 : f16 to f32
          %3 = arith.extf %1 : f16 to f32
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          %5 = arith.mulf %2, %3 : f32
          %6 = arith.addf %4, %5 : f32
          affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        }
      }
    }
  }
  return
}

