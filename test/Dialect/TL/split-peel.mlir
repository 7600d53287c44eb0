// RUN: llm-opt %s -split-input-file -verify-diagnostics \
// RUN:   -tl-schedule='script={split_peel(s, 0, 16)}' -canonicalize | FileCheck %s

// 100 = 6 * 16 + 4: the split loops cover 96 elements with a constant inner
// extent (no min bound), and a copy of the loop runs the last 4.
// CHECK-LABEL: func.func @static
// CHECK: tl.for %[[O:[a-z0-9_]+]] = %{{.+}} to %c6 step
// CHECK-NEXT: arith.muli %[[O]], %c16
// CHECK-NEXT: tl.for %{{.+}} = %{{.+}} to %c16 step
// CHECK-NOT: minui
// CHECK: tl.block "s"
// CHECK: tl.for %[[T:[a-z0-9_]+]] = %{{.+}} to %c4 step
// CHECK-NEXT: %[[I:.+]] = arith.addi %[[T]], %c96
// CHECK-NEXT: tl.block "s_tail" (%{{.+}} = spatial %[[I]])
func.func @static(%y: memref<100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c100 = arith.constant 100 : index
  tl.for %i = %c0 to %c100 step %c1 {
    tl.block "s" (%vi = spatial %i) reads() writes(%y[%vi] : memref<100xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%vi] : memref<100xf32>
    }
  }
  return
}

// -----

// A dynamic extent: the whole multiples, then the remainder.
// CHECK-LABEL: func.func @dynamic
// CHECK: %[[N:.+]] = memref.dim
// CHECK: %[[Q:.+]] = arith.divui %[[N]], %c16
// CHECK: %[[M:.+]] = arith.muli %[[Q]], %c16
// CHECK: tl.for %{{.+}} = %c0 to %[[Q]] step
// CHECK: tl.for %{{.+}} = %c0 to %c16 step
// CHECK: %[[R:.+]] = arith.subi %[[N]], %[[M]]
// CHECK: tl.for %[[T:.+]] = %c0 to %[[R]] step
// CHECK-NEXT: arith.addi %[[M]], %[[T]]
func.func @dynamic(%y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %y, %c0 : memref<?xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.block "s" (%vi = spatial %i) reads() writes(%y[%vi] : memref<?xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%vi] : memref<?xf32>
    }
  }
  return
}

// -----

// A multiple has no tail.
// CHECK-LABEL: func.func @exact
// CHECK-NOT: _tail
func.func @exact(%y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  tl.for %i = %c0 to %c64 step %c1 {
    tl.block "s" (%vi = spatial %i) reads() writes(%y[%vi] : memref<64xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%vi] : memref<64xf32>
    }
  }
  return
}

// -----

func.func @not_normalised(%y: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  // expected-error @+1 {{split: the loop must start at 0 with step 1}}
  tl.for %i = %c1 to %c64 step %c2 {
    tl.block "s" (%vi = spatial %i) reads() writes(%y[%vi] : memref<64xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%vi] : memref<64xf32>
    }
  }
  return
}
