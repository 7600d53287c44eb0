// RUN: llm-opt %s -tl-outline-kernels -tl-estimate-cost=target=cpu:znver4 | FileCheck %s
// RUN: llm-opt %s -tl-outline-kernels -tl-estimate-cost=target=cpu:znver4,-avx512vnni | FileCheck %s --check-prefix=NOVNNI

// Each kernel's work per call, in the caller's sizes (argN, argN.D).

// A matmul over a dynamic row count: 2 * 32 * 64 flops per row; bytes are
// the weight once and a row of x and y per row; one fused multiply-add per
// (row, column, k) without vector lanes; its parallel loop runs dim(x, 0)
// times.
// CHECK: llmc.kernels = [
// CHECK-SAME: {bytes = [{c = 8.192000e+03 : f64, of = []}, {c = 3.840000e+02 : f64, of = ["arg0.0"]}], caller = "matmul", calls = 1 : i64, exact = true,
// CHECK-SAME: flops = [{c = 4.096000e+03 : f64, of = ["arg0.0"]}],
// CHECK-SAME: instructions = [{c = 2.048000e+03 : f64, of = ["arg0.0"]}], int_ops = [], name = "matmul.mm",
// CHECK-SAME: parallel = [{c = 1.000000e+00 : f64, of = ["arg0.0"]}], phase = "prefill", trips = [{c = 1.000000e+00 : f64, of = ["arg0.0"]}]}
func.func @matmul(%x: memref<?x64xf32>, %w: memref<32x64xf32>, %y: memref<?x32xf32>) attributes {llmc.phase = "prefill"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  tl.for %i = %c0 to %n step %c1 kind(parallel) {
    tl.for %j = %c0 to %c32 step %c1 {
      tl.for %k = %c0 to %c64 step %c1 {
        tl.block "mm" (%r = spatial %i, %c = spatial %j, %d = reduce %k) reads(%x[%r, %d] : memref<?x64xf32>, %w[%c, %d] : memref<32x64xf32>, %y[%r, %c] : memref<?x32xf32>) writes(%y[%r, %c] : memref<?x32xf32>) {
          %a = affine.load %x[%r, %d] : memref<?x64xf32>
          %b = affine.load %w[%c, %d] : memref<32x64xf32>
          %acc = affine.load %y[%r, %c] : memref<?x32xf32>
          %s = math.fma %a, %b, %acc : f32
          affine.store %s, %y[%r, %c] : memref<?x32xf32>
        }
      }
    }
  }
  return
}

// A loop whose bound grows with the outer one (causal attention): token s
// at pos0 + s attends pos0 + s + 1 positions, summed in closed form:
// n * pos0 + n^2 / 2 + n / 2. The parallel loop is the outer one.
// CHECK-SAME: flops = [{c = 5.000000e-01 : f64, of = ["arg0"]}, {c = 5.000000e-01 : f64, of = ["arg0", "arg0"]}, {c = 1.000000e+00 : f64, of = ["arg0", "arg1"]}]
// CHECK-SAME: name = "causal.scores", parallel = [{c = 1.000000e+00 : f64, of = ["arg0"]}], phase = "causal"
func.func @causal(%n: index, %pos0: index, %k: memref<64x8xf32>, %s: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tl.for %i = %c0 to %n step %c1 kind(parallel) {
    %p = arith.addi %pos0, %i : index
    %e = arith.addi %p, %c1 : index
    tl.for %t = %c0 to %e step %c1 {
      tl.block "scores" (%r = spatial %i, %c = spatial %t) reads(%k[%c, 0] : memref<64x8xf32>) writes(%s[%r, %c] : memref<?x64xf32>) {
        %a = affine.load %k[%c, 0] : memref<64x8xf32>
        %b = arith.mulf %a, %a : f32
        affine.store %b, %s[%r, %c] : memref<?x64xf32>
      }
    }
  }
  return
}

// A tile's remainder: the rows past the last full tile of 4. The quotient
// stays a symbol (its floor), so the remainder runs n - 4 * (n / 4) times
// and a call whose sizes leave it empty does nothing.
// CHECK-SAME: name = "remainder.bump"
// CHECK-SAME: trips = [{c = 1.000000e+00 : f64, of = ["arg0"]}, {c = -4.000000e+00 : f64, of = ["arg0/4"]}]
func.func @remainder(%n: index, %x: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  %q = arith.divui %n, %c4 : index
  %m = arith.muli %q, %c4 : index
  tl.for %i = %m to %n step %c1 {
    tl.block "bump" (%r = spatial %i) reads(%x[%r] : memref<?xf32>) writes(%x[%r] : memref<?xf32>) {
      %a = affine.load %x[%r] : memref<?xf32>
      %b = arith.addf %a, %one : f32
      affine.store %b, %x[%r] : memref<?xf32>
    }
  }
  return
}

// Sums of byte products in 16 x 4 lanes: one VNNI dot instruction for all
// 64 (a multiply and an add each); without VNNI, three.
// CHECK-SAME: instructions = [{c = 1.000000e+00 : f64, of = []}], int_ops = [{c = 1.280000e+02 : f64, of = []}], name = "dot8.idot"
// NOVNNI: instructions = [{c = 3.000000e+00 : f64, of = []}], int_ops = [{c = 1.280000e+02 : f64, of = []}], name = "dot8.idot"
func.func @dot8(%a: memref<64xi8>, %b: memref<64xi8>, %acc: memref<16xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  tl.for %i = %c0 to %c16 step %c1 kind(vectorized) {
    tl.for %k = %c0 to %c4 step %c1 kind(vectorized) {
      tl.block "idot" (%r = spatial %i, %d = reduce %k) reads(%a[%r * 4 + %d] : memref<64xi8>, %b[%r * 4 + %d] : memref<64xi8>, %acc[%r] : memref<16xi32>) writes(%acc[%r] : memref<16xi32>) {
        %x = affine.load %a[%r * 4 + %d] : memref<64xi8>
        %y = affine.load %b[%r * 4 + %d] : memref<64xi8>
        %xe = arith.extsi %x : i8 to i32
        %ye = arith.extsi %y : i8 to i32
        %p = arith.muli %xe, %ye : i32
        %s = affine.load %acc[%r] : memref<16xi32>
        %t = arith.addi %s, %p : i32
        affine.store %t, %acc[%r] : memref<16xi32>
      }
    }
  }
  return
}

// One position of a transposed V cache (head_dim x position): a column,
// one element per row, moves a cache line per row: 8 * 64 bytes written,
// beside the 32 bytes read.
// CHECK-SAME: bytes = [{c = 5.440000e+02 : f64, of = []}]
// CHECK-SAME: name = "column.v_store"
func.func @column(%pos0: index, %v: memref<8xf32>, %cache: memref<8x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %d = %c0 to %c8 step %c1 {
    tl.block "v_store" (%r = spatial %d, %p = spatial %pos0) reads(%v[%r] : memref<8xf32>) writes(%cache[%r, %p] : memref<8x512xf32>) {
      %a = affine.load %v[%r] : memref<8xf32>
      affine.store %a, %cache[%r, %p] : memref<8x512xf32>
    }
  }
  return
}

// One kernel called by two functions: an entry per caller, each with its
// own calls (2 and 1) and sizes (its own argument 0).
// CHECK-SAME: bytes = [{c = 8.000000e+00 : f64, of = ["arg0"]}], caller = "twice", calls = 2 : i64
// CHECK-SAME: name = "twice.scale"
// CHECK-SAME: bytes = [{c = 4.000000e+00 : f64, of = ["arg0"]}], caller = "once", calls = 1 : i64
// CHECK-SAME: name = "twice.scale"
func.func @twice(%n: index, %x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tl.for %i = %c0 to %n step %c1 {
    tl.block "scale" (%r = spatial %i) reads(%x[%r] : memref<?xf32>) writes(%x[%r] : memref<?xf32>) {
      %a = affine.load %x[%r] : memref<?xf32>
      %b = arith.addf %a, %a : f32
      affine.store %b, %x[%r] : memref<?xf32>
    }
  }
  tl.for %i = %c0 to %n step %c1 {
    tl.block "scale" (%r = spatial %i) reads(%x[%r] : memref<?xf32>) writes(%x[%r] : memref<?xf32>) {
      %a = affine.load %x[%r] : memref<?xf32>
      %b = arith.addf %a, %a : f32
      affine.store %b, %x[%r] : memref<?xf32>
    }
  }
  return
}
func.func @once(%n: index, %x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  tl.for %i = %c0 to %n step %c1 {
    tl.block "scale" (%r = spatial %i) reads(%x[%r] : memref<?xf32>) writes(%x[%r] : memref<?xf32>) {
      %a = affine.load %x[%r] : memref<?xf32>
      %b = arith.addf %a, %a : f32
      affine.store %b, %x[%r] : memref<?xf32>
    }
  }
  return
}

// A bound read through a reshape (graph.reshape's lowering): the expanded
// dim is the caller's size over 4, a floor; its rows (16 bytes) share cache
// lines, so a column of them moves whole rows. Two reads of one buffer at
// offsets 0 and 64 of a 128-element range merge: 192 distinct elements,
// not 128 or 256.
// CHECK-SAME: bytes = [{c = 7.680000e+02 : f64, of = []}, {c = 1.600000e+01 : f64, of = ["arg0.0/4"]}], caller = "reshaped"
// CHECK-SAME: name = "reshaped.pairs"
// CHECK-SAME: trips = [{c = 1.000000e+00 : f64, of = ["arg0.0/4"]}]
func.func @reshaped(%x: memref<?xf32>, %t: memref<192xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %q = arith.divui %n, %c4 : index
  %e = memref.expand_shape %x [[0, 1]] output_shape [%q, 4] : memref<?xf32> into memref<?x4xf32>
  %rows = memref.dim %e, %c0 : memref<?x4xf32>
  tl.for %i = %c0 to %rows step %c1 {
    tl.for %j = %c0 to %c128 step %c1 {
      tl.block "pairs" (%r = spatial %i, %c = spatial %j) reads(%e[%r, 0] : memref<?x4xf32>, %t[%c] : memref<192xf32>, %t[%c + 64] : memref<192xf32>) writes(%e[%r, 0] : memref<?x4xf32>) {
        %a = affine.load %t[%c] : memref<192xf32>
        %b = affine.load %t[%c + 64] : memref<192xf32>
        %s = arith.addf %a, %b : f32
        affine.store %s, %e[%r, 0] : memref<?x4xf32>
      }
    }
  }
  return
}

// Tiles of a dynamic extent (flash attention's positions): a loop stepping
// by 64 up to e, each tile min(64, e - t) long. The work counts e / 64 full
// tiles (the tiles' extents add up to e: 2 flops per position); the nest
// runs whenever e > 0, so its trips round up: (e + 63) / 64.
// CHECK-SAME: flops = [{c = 2.000000e+00 : f64, of = ["arg0"]}]
// CHECK-SAME: name = "tiles.sq"
// CHECK-SAME: trips = [{c = 9.843750e-01 : f64, of = []}, {c = 1.562500e-02 : f64, of = ["arg0"]}]
func.func @tiles(%e: index, %x: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  tl.for %t = %c0 to %e step %c64 {
    %rest = arith.subi %e, %t : index
    %n = arith.minui %rest, %c64 : index
    tl.for %x0 = %c0 to %n step %c1 {
      tl.block "sq" (%b = spatial %t, %i = spatial %x0) reads(%x[%b + %i] : memref<1024xf32>) writes(%x[%b + %i] : memref<1024xf32>) {
        %a = affine.load %x[%b + %i] : memref<1024xf32>
        %s = arith.mulf %a, %a : f32
        %d = arith.addf %s, %a : f32
        affine.store %d, %x[%b + %i] : memref<1024xf32>
      }
    }
  }
  return
}

// A choice between a decode step's count and the general one, whose
// condition the kernel receives (flash attention's parts): the general
// branch, 1 part per row, n rows; the same choice seen with its comparison
// (the rows' loop bound) too.
// CHECK-SAME: flops = [{c = 1.000000e+00 : f64, of = ["arg0.0"]}]
// CHECK-SAME: name = "choice.parts"
// CHECK-SAME: trips = [{c = 1.000000e+00 : f64, of = ["arg0.0"]}]
func.func @choice(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %one = arith.cmpi eq, %n, %c1 : index
  %rows = arith.select %one, %c1, %n : index
  tl.for %i = %c0 to %rows step %c1 {
    %parts = arith.select %one, %c2, %c1 : index
    tl.for %p = %c0 to %parts step %c1 {
      tl.block "parts" (%vp = spatial %p, %vi = spatial %i) reads(%x[%vi] : memref<?xf32>) writes(%x[%vi] : memref<?xf32>) {
        %a = affine.load %x[%vi] : memref<?xf32>
        %b = arith.addf %a, %a : f32
        affine.store %b, %x[%vi] : memref<?xf32>
      }
    }
  }
  return
}
