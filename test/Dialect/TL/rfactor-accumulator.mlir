// RUN: llm-opt %s -split-input-file -verify-diagnostics \
// RUN:   -tl-schedule='script={rfactor(r)}' | FileCheck %s

// rfactor over no lane loops: a sum of products into what the output already
// holds (flash attention's p.V adding to its rescaled output) gets one
// accumulator per output element of the loops inside the reduction, a stack
// buffer shaped by those loops (no lane dimension) that starts at 0 before
// the reduction, takes every product, and is added into the output once
// after it (no loop over lanes there).
// CHECK-LABEL: func.func @pv
// CHECK: %[[RF:[a-z0-9_]+]] = memref.alloca() {alignment = 64 : i64} : memref<2x16xf32>
// CHECK: tl.block "r_rf_init" (%[[I0:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[I1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}) reads() writes(%[[RF]][%[[I0]], %[[I1]]] : memref<2x16xf32>)
// CHECK: arith.constant 0.000000e+00
// CHECK: tl.for %[[X:[a-z0-9_]+]] =
// CHECK: tl.block "r_rf" (%{{[a-z0-9_]+}} = reduce %[[X]], %{{[a-z0-9_]+}} = spatial %{{[a-z0-9_]+}}, %[[D0:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[D1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: writes(%[[RF]][%[[D0]], %[[D1]]] : memref<2x16xf32>)
// CHECK-NOT: init
// CHECK: tl.block "r" (%[[WD:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[W0:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[W1:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%arg2[%[[WD]]] : memref<32xf32>, %[[RF]][%[[W0]], %[[W1]]] : memref<2x16xf32>) writes(%arg2[%[[WD]]] : memref<32xf32>) {
// CHECK-NEXT: affine.load %arg2
// CHECK-NEXT: affine.load %[[RF]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: affine.store
func.func @pv(%p: memref<8xf32>, %v: memref<8x32xf32>, %o: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  tl.for %x = %c0 to %c8 step %c1 {
    tl.for %d0 = %c0 to %c2 step %c1 {
      tl.for %d1 = %c0 to %c16 step %c1 {
        %d = affine.apply affine_map<(a, b) -> (a * 16 + b)>(%d0, %d1)
        tl.block "r" (%vx = reduce %x, %vd = spatial %d)
            reads(%p[%vx] : memref<8xf32>, %v[%vx, %vd] : memref<8x32xf32>, %o[%vd] : memref<32xf32>)
            writes(%o[%vd] : memref<32xf32>) {
          %a = affine.load %p[%vx] : memref<8xf32>
          %b = affine.load %v[%vx, %vd] : memref<8x32xf32>
          %m = arith.mulf %a, %b : f32
          %s = affine.load %o[%vd] : memref<32xf32>
          %n = arith.addf %s, %m : f32
          affine.store %n, %o[%vd] : memref<32xf32>
        }
      }
    }
  }
  return
}

// -----

// A sum whose init stores 0: the accumulator is stored as the output after
// the reduction (0 plus the accumulator), no init left.
// CHECK-LABEL: func.func @dot_from_zero
// CHECK: %[[RF:[a-z0-9_]+]] = memref.alloca() {alignment = 64 : i64} : memref<4xf32>
// CHECK: tl.block "r_rf"
// CHECK-NOT: init
// CHECK: tl.block "r" (%[[WI:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}}, %[[W0:[a-z0-9_]+]] = spatial %{{[a-z0-9_]+}})
// CHECK-SAME: reads(%[[RF]][%[[W0]]] : memref<4xf32>) writes(%arg1[%[[WI]]] : memref<4xf32>) {
// CHECK-NEXT: %[[P:.+]] = affine.load %[[RF]]
// CHECK-NEXT: affine.store %[[P]], %arg1
func.func @dot_from_zero(%x: memref<8x4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %k = %c0 to %c8 step %c1 {
    tl.for %i = %c0 to %c4 step %c1 {
      tl.block "r" (%vk = reduce %k, %vi = spatial %i)
          reads(%x[%vk, %vi] : memref<8x4xf32>, %y[%vi] : memref<4xf32>)
          writes(%y[%vi] : memref<4xf32>) init {
        %z = arith.constant 0.0 : f32
        affine.store %z, %y[%vi] : memref<4xf32>
      } {
        %a = affine.load %x[%vk, %vi] : memref<8x4xf32>
        %s = affine.load %y[%vi] : memref<4xf32>
        %p = arith.addf %s, %a : f32
        affine.store %p, %y[%vi] : memref<4xf32>
      }
    }
  }
  return
}

// -----

// With no lane loops, an init other than 0 into a sum is refused (the
// output would need it before the accumulator is added).
func.func @with_init(%x: memref<4x8xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %i = %c0 to %c4 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      // expected-error @+1 {{rfactor: with no lane loops, the init of tl.block 'r' must store 0 into its sum (or be absent)}}
      tl.block "r" (%vi = spatial %i, %vk = reduce %k)
          reads(%x[%vi, %vk] : memref<4x8xf32>, %y[%vi] : memref<4xf32>)
          writes(%y[%vi] : memref<4xf32>) init {
        %z = arith.constant 1.0 : f32
        affine.store %z, %y[%vi] : memref<4xf32>
      } {
        %a = affine.load %x[%vi, %vk] : memref<4x8xf32>
        %s = affine.load %y[%vi] : memref<4xf32>
        %p = arith.addf %s, %a : f32
        affine.store %p, %y[%vi] : memref<4xf32>
      }
    }
  }
  return
}
