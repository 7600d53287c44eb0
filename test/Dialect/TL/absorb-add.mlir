// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={absorb_add(add)}' | FileCheck %s

// A residual add after a product (z = y + x, y = sum of products) taken into
// the product: its sums start at x (the init stores x's element) and
// accumulate in z; the add's nest and y are gone. The same terms as
// before, added in another order.
// CHECK-LABEL: func.func @residual
// CHECK-NOT: memref.alloc
// CHECK: tl.block "matmul" ({{.*}}) reads(%arg0[{{.*}}, %arg1[{{.*}}, %arg3[{{.*}}, %arg2[{{.*}}) writes(%arg3[
// CHECK-NEXT: %[[X:.*]] = affine.load %arg2
// CHECK-NEXT: affine.store %[[X]], %arg3
// CHECK: %[[ACC:.*]] = affine.load %arg3
// CHECK: arith.addf %[[ACC]]
// CHECK: affine.store {{.*}}, %arg3
// CHECK-NOT: tl.block "add"
func.func @residual(%h: memref<1x64xf32>, %w: memref<32x64xf16>, %x: memref<1x32xf32>, %z: memref<1x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c64 step %c1 {
      tl.block "matmul" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x64xf32>, %w[%vo, %vi] : memref<32x64xf16>, %y[%vt, %vo] : memref<1x32xf32>) writes(%y[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x64xf32>
        %1 = affine.load %w[symbol(%vo), symbol(%vi)] : memref<32x64xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    tl.block "add" (%vt = spatial %c0, %vo = spatial %o) reads(%x[%vt, %vo] : memref<1x32xf32>, %y[%vt, %vo] : memref<1x32xf32>) writes(%z[%vt, %vo] : memref<1x32xf32>) {
      %0 = affine.load %x[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %1 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %z[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
    }
  }
  return
}

// -----

// Only an add distributes over the sum: a product after it stays a nest of
// its own.
func.func @scaled(%h: memref<1x64xf32>, %w: memref<32x64xf16>, %x: memref<1x32xf32>, %z: memref<1x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c64 step %c1 {
      tl.block "matmul" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x64xf32>, %w[%vo, %vi] : memref<32x64xf16>, %y[%vt, %vo] : memref<1x32xf32>) writes(%y[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x64xf32>
        %1 = affine.load %w[symbol(%vo), symbol(%vi)] : memref<32x64xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    // expected-error @+1 {{reverse_compute_inline: tl.block 'add' must add one value to its producer's sums (z = y + x)}}
    tl.block "add" (%vt = spatial %c0, %vo = spatial %o) reads(%x[%vt, %vo] : memref<1x32xf32>, %y[%vt, %vo] : memref<1x32xf32>) writes(%z[%vt, %vo] : memref<1x32xf32>) {
      %0 = affine.load %x[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %1 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %2 = arith.mulf %0, %1 : f32
      affine.store %2, %z[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
    }
  }
  return
}

// -----

// y + f(y) is no sum plus a value: refused.
func.func @self(%h: memref<1x64xf32>, %w: memref<32x64xf16>, %x: memref<1x32xf32>, %z: memref<1x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c64 step %c1 {
      tl.block "matmul" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x64xf32>, %w[%vo, %vi] : memref<32x64xf16>, %y[%vt, %vo] : memref<1x32xf32>) writes(%y[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x64xf32>
        %1 = affine.load %w[symbol(%vo), symbol(%vi)] : memref<32x64xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    // expected-error @+1 {{reverse_compute_inline: tl.block 'add' must add one value to its producer's sums (z = y + x)}}
    tl.block "add" (%vt = spatial %c0, %vo = spatial %o) reads(%y[%vt, %vo] : memref<1x32xf32>) writes(%z[%vt, %vo] : memref<1x32xf32>) {
      %0 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %1 = arith.mulf %0, %two : f32
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %z[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
    }
  }
  return
}

// -----

// Another block of the product's nest writes the residual the add reads:
// taken into the product, the add would read it before that block ran.
func.func @nest_writes_residual(%h: memref<1x64xf32>, %w: memref<32x64xf16>, %x: memref<1x32xf32>, %z: memref<1x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c64 step %c1 {
      tl.block "matmul" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x64xf32>, %w[%vo, %vi] : memref<32x64xf16>, %y[%vt, %vo] : memref<1x32xf32>) writes(%y[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x64xf32>
        %1 = affine.load %w[symbol(%vo), symbol(%vi)] : memref<32x64xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      }
    }
    tl.block "reset" (%vt = spatial %c0, %vo = spatial %o) reads() writes(%x[%vt, %vo] : memref<1x32xf32>) {
      affine.store %cst, %x[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    // expected-error @+1 {{reverse_compute_inline: another block of its producer's loop nest accesses what it reads or writes}}
    tl.block "add" (%vt = spatial %c0, %vo = spatial %o) reads(%x[%vt, %vo] : memref<1x32xf32>, %y[%vt, %vo] : memref<1x32xf32>) writes(%z[%vt, %vo] : memref<1x32xf32>) {
      %0 = affine.load %x[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %1 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %z[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
    }
  }
  return
}

// -----

// Each element of the add's output must come from one of the sums: a write
// map that is no permutation (every element into z[0, 0]) is refused.
func.func @not_permutation(%h: memref<1x64xf32>, %w: memref<32x64xf16>, %x: memref<1x32xf32>, %z: memref<1x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %y = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c64 step %c1 {
      tl.block "matmul" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x64xf32>, %w[%vo, %vi] : memref<32x64xf16>, %y[%vt, %vo] : memref<1x32xf32>) writes(%y[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x64xf32>
        %1 = affine.load %w[symbol(%vo), symbol(%vi)] : memref<32x64xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    // expected-error @+1 {{reverse_compute_inline: tl.block 'add' must write each element once, at its own variables (a permutation of them)}}
    tl.block "add" (%vt = spatial %c0, %vo = spatial %o) reads(%x[%vt, %vo] : memref<1x32xf32>, %y[%vt, %vo] : memref<1x32xf32>) writes(%z[0, 0] : memref<1x32xf32>) {
      %0 = affine.load %x[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %1 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %z[0, 0] : memref<1x32xf32>
    }
  }
  return
}
