// RUN: llm-opt %s -tl-specialize-decode -canonicalize | FileCheck %s

// The prefill version runs two tokens or more: a comparison of the count
// with 1 and its minimum with 2 (the attention's parts: 1 + (2 - min(n, 2))
// x 3) fold there, the loop over the parts of one iteration goes; the
// decode version has 4 parts.
// CHECK-LABEL: func.func private @forward_prefill
// CHECK-NOT: arith.cmpi
// CHECK-NOT: arith.minui
// CHECK-NOT: tl.for
// CHECK: tl.block "part" (%{{.+}} = spatial %c0, %{{.+}} = spatial %c0)
// CHECK: func.func private @forward_decode
// CHECK: tl.for %[[P:.+]] = %c0 to %c4 step %c1
// CHECK: tl.block "part" (%{{.+}} = spatial %[[P]], %{{.+}} = spatial %c1)
func.func @forward(%t: memref<?xi32>, %out: memref<8xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %f = arith.constant 1.0 : f32
  %n = memref.dim %t, %c0 : memref<?xi32>
  %m = arith.minui %n, %c2 : index
  %s = arith.subi %c2, %m : index
  %x = arith.muli %s, %c3 : index
  %parts = arith.addi %c1, %x : index
  %one = arith.cmpi eq, %n, %c1 : index
  %first = arith.select %one, %c1, %c0 : index
  tl.for %p = %c0 to %parts step %c1 {
    tl.block "part" (%v = spatial %p, %o = spatial %first) reads() writes(%out[%v + %o] : memref<8xf32>) {
      affine.store %f, %out[%v + %o] : memref<8xf32>
    }
  }
  return
}
