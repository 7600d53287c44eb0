// RUN: llm-opt %s -tl-schedule='script={dequant_halves(matmul)}' | FileCheck %s
// RUN: llm-opt %s -tl-schedule='script={split_halves(matmul, 0); dequant_halves(matmul)}' | FileCheck %s --check-prefix=SPLIT
// RUN: llm-opt %s -tl-schedule='script={split_halves(matmul, 0); dequant_halves(matmul); library(matmul, 0)}' -tl-verify-parallel | FileCheck %s --check-prefix=BAND
// RUN: llm-opt %s -tl-schedule='script={dequant_halves(matmul_r)}' | FileCheck %s --check-prefix=RES

// dequant_halves: a Q8_0 product's weight (the block's f16 scale times its
// int8 quant, computed in the block) written by a nest of its own as two
// f16 matrices [16, 64] (hi, lo = (w - hi) * 2^11) over the columns and the
// reduction's loops (2 blocks x 32); the product then one loop over k = 64,
// x * hi + (x * lo) * 2^-11. With x split first: xh * hi + (xl * hi + xh *
// lo) * 2^-11, a matrix band of three products.
// CHECK: %[[HI:.+]] = memref.alloc() {alignment = 64 : i64} : memref<16x64xf16>
// CHECK: %[[LO:.+]] = memref.alloc() {alignment = 64 : i64} : memref<16x64xf16>
// CHECK: tl.for %{{.*}} to %c16
// CHECK: tl.for %{{.*}} to %c2
// CHECK: tl.for %{{.*}} to %c32
// CHECK: tl.block "matmul_weight_halves" (%[[C:.+]] = spatial %{{.*}}, %[[KB:.+]] = spatial %{{.*}}, %[[KI:.+]] = spatial %{{.*}}) reads(%arg1[%[[C]], %[[KB]] * 34] : memref<16x68xi8>, %arg1[%[[C]], %[[KB]] * 34 + 1] : memref<16x68xi8>, %arg1[%[[C]], %[[KB]] * 34 + %[[KI]] + 2] : memref<16x68xi8>) writes(%[[HI]][%[[C]], %[[KB]] * 32 + %[[KI]]] : memref<16x64xf16>, %[[LO]][%[[C]], %[[KB]] * 32 + %[[KI]]] : memref<16x64xf16>)
// CHECK: arith.sitofp
// CHECK: arith.truncf
// CHECK: arith.constant 2.048000e+03 : f32
// CHECK: tl.for %[[T:.+]] = %c0 to %arg3
// CHECK-NEXT: tl.for %[[O:.+]] = %c0 to %c16
// CHECK-NEXT: tl.for %[[K:.+]] = %c0{{.*}} to %c64
// CHECK-NEXT: tl.block "matmul" (%[[VT:.+]] = spatial %[[T]], %[[VO:.+]] = spatial %[[O]], %[[VK:.+]] = reduce %[[K]]) reads(%arg0[%[[VT]], %[[VK]]] : memref<?x64xf32>, %[[HI]][%[[VO]], %[[VK]]] : memref<16x64xf16>, %[[LO]][%[[VO]], %[[VK]]] : memref<16x64xf16>, %arg2[%[[VT]], %[[VO]]] : memref<?x16xf32>) writes(%arg2[%[[VT]], %[[VO]]] : memref<?x16xf32>)
// CHECK-NOT: arith.sitofp
// CHECK: arith.constant 4.8828125E-4 : f32
// SPLIT: tl.block "matmul_halves"
// SPLIT: tl.block "matmul_weight_halves"
// SPLIT: tl.block "matmul" ({{.*}}) reads(%{{.*}} : memref<?x64xf16>, %{{.*}} : memref<?x64xf16>, %{{.*}} : memref<16x64xf16>, %{{.*}} : memref<16x64xf16>, %arg2
// BAND: tl.for {{.*}} kind(library)
// BAND-NEXT: tl.for {{.*}} kind(library)
// BAND-NEXT: tl.for {{.*}} to %c64 step %c1{{.*}} kind(library)
func.func @q8(%x: memref<?x64xf32>, %w: memref<16x68xi8>, %y: memref<?x16xf32>, %n: index) {
  %cst = arith.constant 0.000000e+00 : f32
  %c8_i16 = arith.constant 8 : i16
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %t = %c0 to %n step %c1 {
    tl.for %o = %c0 to %c16 step %c1 {
      tl.for %kb = %c0 to %c2 step %c1 {
        tl.for %ki = %c0 to %c32 step %c1 {
          tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vb = reduce %kb, %vi = reduce %ki) reads(%x[%vt, %vb * 32 + %vi] : memref<?x64xf32>, %w[%vo, %vb * 34 + %vi + 2] : memref<16x68xi8>, %w[%vo, %vb * 34] : memref<16x68xi8>, %w[%vo, %vb * 34 + 1] : memref<16x68xi8>, %y[%vt, %vo] : memref<?x16xf32>) writes(%y[%vt, %vo] : memref<?x16xf32>) init {
            affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
          } {
            %0 = affine.load %w[symbol(%vo), symbol(%vb) * 34] : memref<16x68xi8>
            %1 = arith.extui %0 : i8 to i16
            %2 = affine.load %w[symbol(%vo), symbol(%vb) * 34 + 1] : memref<16x68xi8>
            %3 = arith.extui %2 : i8 to i16
            %4 = arith.shli %3, %c8_i16 : i16
            %5 = arith.ori %1, %4 : i16
            %6 = arith.bitcast %5 : i16 to f16
            %7 = arith.extf %6 : f16 to f32
            %8 = affine.load %w[symbol(%vo), symbol(%vb) * 34 + symbol(%vi) + 2] : memref<16x68xi8>
            %9 = arith.sitofp %8 : i8 to f32
            %10 = arith.mulf %7, %9 : f32
            %11 = affine.load %x[symbol(%vt), symbol(%vb) * 32 + symbol(%vi)] : memref<?x64xf32>
            %12 = arith.mulf %11, %10 : f32
            %13 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
            %14 = arith.addf %13, %12 : f32
            affine.store %14, %y[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
          }
        }
      }
    }
  }
  return
}

// A product whose sums start at a residual (its init stores r's element, as
// the GPU schedule's absorbed adds do) keeps reading r.
// RES-LABEL: func.func @residual
// RES: tl.block "matmul_r" ({{.*}}) reads({{.*}}, %arg3[%{{.*}}, %{{.*}}] : memref<?x16xf32>) writes(%arg2
// RES-NEXT: %[[R:.+]] = affine.load %arg3
// RES-NEXT: affine.store %[[R]], %arg2
func.func @residual(%x: memref<?x64xf32>, %w: memref<16x68xi8>, %y: memref<?x16xf32>, %r: memref<?x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %t = %c0 to %n step %c1 {
    tl.for %o = %c0 to %c16 step %c1 {
      tl.for %kb = %c0 to %c2 step %c1 {
        tl.for %ki = %c0 to %c32 step %c1 {
          tl.block "matmul_r" (%vt = spatial %t, %vo = spatial %o, %vb = reduce %kb, %vi = reduce %ki) reads(%x[%vt, %vb * 32 + %vi] : memref<?x64xf32>, %w[%vo, %vb * 34 + %vi + 2] : memref<16x68xi8>, %w[%vo, %vb * 34] : memref<16x68xi8>, %y[%vt, %vo] : memref<?x16xf32>, %r[%vt, %vo] : memref<?x16xf32>) writes(%y[%vt, %vo] : memref<?x16xf32>) init {
            %i = affine.load %r[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
            affine.store %i, %y[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
          } {
            %0 = affine.load %w[symbol(%vo), symbol(%vb) * 34] : memref<16x68xi8>
            %1 = arith.sitofp %0 : i8 to f32
            %2 = affine.load %w[symbol(%vo), symbol(%vb) * 34 + symbol(%vi) + 2] : memref<16x68xi8>
            %3 = arith.sitofp %2 : i8 to f32
            %4 = arith.mulf %1, %3 : f32
            %5 = affine.load %x[symbol(%vt), symbol(%vb) * 32 + symbol(%vi)] : memref<?x64xf32>
            %6 = arith.mulf %5, %4 : f32
            %7 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
            %8 = arith.addf %7, %6 : f32
            affine.store %8, %y[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
          }
        }
      }
    }
  }
  return
}
