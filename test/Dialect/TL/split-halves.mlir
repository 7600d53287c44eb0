// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={split_halves(matmul, 0)}' | FileCheck %s

// split_halves holds the f32 values a product reads as two f16 halves: a
// nest before the product's writes hi = f16(v) and lo = f16((v - hi) *
// 2^11) into two buffers shaped like the read's, and the product v * w
// becomes ext(hi) * w + (ext(lo) * w) * 2^-11 (its fma too).
// CHECK-LABEL: func.func @halves
// CHECK: %[[HI:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x32xf16>
// CHECK: %[[LO:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?x32xf16>
// CHECK: tl.block "matmul_halves" ({{.*}}) reads(%arg0{{.*}}) writes(%[[HI]]{{.*}}, %[[LO]]
// CHECK-NEXT: %[[V:.*]] = affine.load %arg0
// CHECK-NEXT: %[[H:.*]] = arith.truncf %[[V]] : f32 to f16
// CHECK-NEXT: %[[HW:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK-NEXT: %[[R:.*]] = arith.subf %[[V]], %[[HW]] : f32
// CHECK: %[[RS:.*]] = arith.mulf %[[R]], %{{.*}} : f32
// CHECK-NEXT: %[[L:.*]] = arith.truncf %[[RS]] : f32 to f16
// CHECK-NEXT: affine.store %[[H]], %[[HI]]
// CHECK-NEXT: affine.store %[[L]], %[[LO]]
// CHECK: tl.block "matmul" ({{.*}}) reads(%[[HI]]{{.*}}, %[[LO]]{{.*}}, %arg1
// CHECK: %[[A:.*]] = affine.load %[[HI]]
// CHECK-NEXT: %[[AW:.*]] = arith.extf %[[A]]
// CHECK-NEXT: %[[B:.*]] = affine.load %[[LO]]
// CHECK-NEXT: %[[BW:.*]] = arith.extf %[[B]]
// CHECK: %[[Q:.*]] = arith.mulf %[[BW]], %[[W:.*]] : f32
// CHECK-NEXT: %[[C:.*]] = arith.constant 4.8828125E-4 : f32
// CHECK-NEXT: %[[QS:.*]] = arith.mulf %[[Q]], %[[C]] : f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[AW]], %[[W]] : f32
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[P]], %[[QS]] : f32
// CHECK-NEXT: %[[T:.*]] = arith.addf %[[ACC:.*]], %[[S]] : f32
func.func @halves(%x: memref<?x32xf32>, %w: memref<16x32xf16>, %y: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  tl.for %t = %c0 to %n step %c1 {
    tl.for %o = %c0 to %c16 step %c1 {
      tl.for %i = %c0 to %c32 step %c1 {
        tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vi = reduce %i) reads(%x[%vt, %vi] : memref<?x32xf32>, %w[%vo, %vi] : memref<16x32xf16>, %y[%vt, %vo] : memref<?x16xf32>) writes(%y[%vt, %vo] : memref<?x16xf32>) {
          %0 = affine.load %x[symbol(%vt), symbol(%vi)] : memref<?x32xf32>
          %1 = affine.load %w[symbol(%vo), symbol(%vi)] : memref<16x32xf16>
          %2 = arith.extf %1 : f16 to f32
          %3 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
          %4 = math.fma %0, %2, %3 : f32
          affine.store %4, %y[symbol(%vt), symbol(%vo)] : memref<?x16xf32>
        }
      }
    }
  }
  return
}

// -----

// Read 0 must be f32 and multiplied once into the accumulator.
func.func @not_a_product(%x: memref<16xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  tl.for %i = %c0 to %c16 step %c1 {
    // expected-error @+1 {{split_halves: the block must add the product of the read's one load and another value into its accumulator}}
    tl.block "matmul" (%vi = reduce %i) reads(%x[%vi] : memref<16xf32>, %y[0] : memref<1xf32>) writes(%y[0] : memref<1xf32>) {
      %0 = affine.load %x[symbol(%vi)] : memref<16xf32>
      %1 = affine.load %y[0] : memref<1xf32>
      %2 = arith.addf %1, %0 : f32
      affine.store %2, %y[0] : memref<1xf32>
    }
  }
  return
}

// -----

func.func @f16_read(%x: memref<16xf16>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  tl.for %i = %c0 to %c16 step %c1 {
    // expected-error @+1 {{split_halves: read 0 must be of an f32 buffer the block does not write}}
    tl.block "matmul" (%vi = reduce %i) reads(%x[%vi] : memref<16xf16>, %y[0] : memref<1xf32>) writes(%y[0] : memref<1xf32>) {
      %0 = affine.load %x[symbol(%vi)] : memref<16xf16>
      %1 = arith.extf %0 : f16 to f32
      %2 = affine.load %y[0] : memref<1xf32>
      %3 = arith.mulf %1, %1 : f32
      %4 = arith.addf %2, %3 : f32
      affine.store %4, %y[0] : memref<1xf32>
    }
  }
  return
}

// -----

// The nest writes the activations it reads: halves made before it would be
// stale.
func.func @written(%x: memref<16xf32>, %w: memref<16xf16>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %z = arith.constant 0.0 : f32
  tl.for %i = %c0 to %c16 step %c1 {
    // expected-error @+1 {{split_halves: the nest writes the buffer of read 0}}
    tl.block "matmul" (%vi = reduce %i) reads(%x[%vi] : memref<16xf32>, %w[%vi] : memref<16xf16>, %y[0] : memref<1xf32>) writes(%y[0] : memref<1xf32>) {
      %0 = affine.load %x[symbol(%vi)] : memref<16xf32>
      %1 = affine.load %w[symbol(%vi)] : memref<16xf16>
      %2 = arith.extf %1 : f16 to f32
      %3 = affine.load %y[0] : memref<1xf32>
      %4 = arith.mulf %0, %2 : f32
      %5 = arith.addf %3, %4 : f32
      affine.store %5, %y[0] : memref<1xf32>
    }
    tl.block "reset" (%vi2 = spatial %i) reads() writes(%x[%vi2] : memref<16xf32>) {
      affine.store %z, %x[symbol(%vi2)] : memref<16xf32>
    }
  }
  return
}
