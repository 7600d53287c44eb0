// RUN: llm-opt %s -tl-outline-kernels -split-input-file -verify-diagnostics | FileCheck %s

// Two layers scale their own rows by their own weights: the same nest over
// other buffers. Both become calls of one kernel, named after the nest's
// block without the layer numbering; the bound stays a constant inside it,
// the buffers and the row count are arguments, in order of first use. The
// kernel is noinline: LLVM must not copy it back into each call.
// CHECK-LABEL: func.func @layers
// CHECK-SAME: (%[[N:.+]]: index, %[[X:.+]]: memref<?x64xf32>, %[[W0:.+]]: memref<64xf32>, %[[W1:.+]]: memref<64xf32>, %[[Y:.+]]: memref<?x64xf32>)
// CHECK: %[[T:.+]] = memref.alloc
// CHECK-NEXT: call @layers.scale(%[[N]], %[[X]], %[[W0]], %[[T]])
// CHECK-NEXT: call @layers.scale(%[[N]], %[[T]], %[[W1]], %[[Y]])
// CHECK-NEXT: memref.dealloc %[[T]]
// CHECK-NEXT: return
// CHECK: func.func private @layers.scale(%[[KN:.+]]: index, %[[KX:.+]]: memref<?x64xf32>, %[[KW:.+]]: memref<64xf32>, %[[KY:.+]]: memref<?x64xf32>) attributes {llmc.kernel, passthrough = ["noinline"]}
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK: tl.for %{{.+}} = %{{.+}} to %[[KN]]
// CHECK: tl.for %{{.+}} = %{{.+}} to %[[C64]]
// CHECK: tl.block "scale_0"
// CHECK: return
// CHECK-NOT: func.func private @layers.scale
func.func @layers(%n: index, %x: memref<?x64xf32>, %w0: memref<64xf32>, %w1: memref<64xf32>, %y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %t = memref.alloc(%n) : memref<?x64xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.for %j = %c0 to %c64 step %c1 {
      tl.block "scale_0" (%r = spatial %i, %c = spatial %j) reads(%x[%r, %c] : memref<?x64xf32>, %w0[%c] : memref<64xf32>) writes(%t[%r, %c] : memref<?x64xf32>) {
        %a = affine.load %x[%r, %c] : memref<?x64xf32>
        %b = affine.load %w0[%c] : memref<64xf32>
        %p = arith.mulf %a, %b : f32
        affine.store %p, %t[%r, %c] : memref<?x64xf32>
      }
    }
  }
  tl.for %i = %c0 to %n step %c1 {
    tl.for %j = %c0 to %c64 step %c1 {
      tl.block "scale_1" (%r = spatial %i, %c = spatial %j) reads(%t[%r, %c] : memref<?x64xf32>, %w1[%c] : memref<64xf32>) writes(%y[%r, %c] : memref<?x64xf32>) {
        %a = affine.load %t[%r, %c] : memref<?x64xf32>
        %b = affine.load %w1[%c] : memref<64xf32>
        %p = arith.mulf %a, %b : f32
        affine.store %p, %y[%r, %c] : memref<?x64xf32>
      }
    }
  }
  memref.dealloc %t : memref<?x64xf32>
  return
}

// -----

// Each layer's slice of a cache has its own static offset: the kernel takes
// any offset, and the calls cast to it; both layers share the kernel.
// CHECK-LABEL: func.func @slices
// CHECK: %[[S0:.+]] = memref.subview %{{.+}}[0, 0] [1, 32] [1, 1]
// CHECK: %[[D0:.+]] = memref.cast %[[S0]] : memref<32xf32, strided<[1]>> to memref<32xf32, strided<[1], offset: ?>>
// CHECK: call @slices.store(%{{.+}}, %[[D0]])
// CHECK: %[[S1:.+]] = memref.subview %{{.+}}[1, 0] [1, 32] [1, 1]
// CHECK: %[[D1:.+]] = memref.cast %[[S1]] : memref<32xf32, strided<[1], offset: 32>> to memref<32xf32, strided<[1], offset: ?>>
// CHECK: call @slices.store(%{{.+}}, %[[D1]])
// CHECK: func.func private @slices.store(%{{.+}}: memref<32xf32>, %{{.+}}: memref<32xf32, strided<[1], offset: ?>>)
// CHECK-NOT: func.func private
func.func @slices(%v: memref<32xf32>, %cache: memref<2x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %s0 = memref.subview %cache[0, 0] [1, 32] [1, 1] : memref<2x32xf32> to memref<32xf32, strided<[1]>>
  tl.for %i = %c0 to %c32 step %c1 {
    tl.block "store" (%d = spatial %i) reads(%v[%d] : memref<32xf32>) writes(%s0[%d] : memref<32xf32, strided<[1]>>) {
      %a = affine.load %v[%d] : memref<32xf32>
      affine.store %a, %s0[%d] : memref<32xf32, strided<[1]>>
    }
  }
  %s1 = memref.subview %cache[1, 0] [1, 32] [1, 1] : memref<2x32xf32> to memref<32xf32, strided<[1], offset: 32>>
  tl.for %i = %c0 to %c32 step %c1 {
    tl.block "store_1" (%d = spatial %i) reads(%v[%d] : memref<32xf32>) writes(%s1[%d] : memref<32xf32, strided<[1], offset: 32>>) {
      %a = affine.load %v[%d] : memref<32xf32>
      affine.store %a, %s1[%d] : memref<32xf32, strided<[1], offset: 32>>
    }
  }
  return
}

// -----

// Nests that differ in a constant (a bound, a scale) or in a loop kind are
// different kernels; a nest that is not at the top level stays where it is.
// CHECK-LABEL: func.func @different
// CHECK: call @different.add(
// CHECK: call @different.add_1(
// CHECK: call @different.add_2(
// CHECK: scf.if
// CHECK-NEXT: tl.for
// CHECK-COUNT-3: func.func private @different.add
// CHECK-NOT: func.func private
func.func @different(%x: memref<64xf32>, %f: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  tl.for %i = %c0 to %c32 step %c1 {
    tl.block "add" (%d = spatial %i) reads(%x[%d] : memref<64xf32>) writes(%x[%d] : memref<64xf32>) {
      %a = affine.load %x[%d] : memref<64xf32>
      %b = arith.addf %a, %one : f32
      affine.store %b, %x[%d] : memref<64xf32>
    }
  }
  tl.for %i = %c0 to %c32 step %c1 {
    tl.block "add" (%d = spatial %i) reads(%x[%d] : memref<64xf32>) writes(%x[%d] : memref<64xf32>) {
      %a = affine.load %x[%d] : memref<64xf32>
      %b = arith.addf %a, %two : f32
      affine.store %b, %x[%d] : memref<64xf32>
    }
  }
  tl.for %i = %c0 to %c64 step %c1 kind(parallel) {
    tl.block "add" (%d = spatial %i) reads(%x[%d] : memref<64xf32>) writes(%x[%d] : memref<64xf32>) {
      %a = affine.load %x[%d] : memref<64xf32>
      %b = arith.addf %a, %one : f32
      affine.store %b, %x[%d] : memref<64xf32>
    }
  }
  scf.if %f {
    tl.for %i = %c0 to %c64 step %c1 {
      tl.block "inner" (%d = spatial %i) reads(%x[%d] : memref<64xf32>) writes(%x[%d] : memref<64xf32>) {
        %a = affine.load %x[%d] : memref<64xf32>
        affine.store %a, %x[%d] : memref<64xf32>
      }
    }
  }
  return
}

// -----

// expected-error @+1 {{tl-outline-kernels expects a single-block function body}}
func.func @blocks(%f: i1) {
  cf.cond_br %f, ^a, ^b
^a:
  return
^b:
  return
}
