// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-specialize-decode -canonicalize | FileCheck %s

// The entry dispatches on the number of tokens: one goes to a decode version
// where that number is the constant 1 (its token loop folds away, its
// buffers are static), more to a prefill version; each is marked with its
// phase for the schedules.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[T:.+]]: memref<?xi32>, %[[OUT:.+]]: memref<?xf32>)
// CHECK: %[[N:.+]] = memref.dim %[[T]], %c0
// CHECK: %[[ONE:.+]] = arith.cmpi eq, %[[N]], %c1
// CHECK: scf.if %[[ONE]] {
// CHECK-NEXT: func.call @forward_decode(%[[T]], %[[OUT]])
// CHECK-NEXT: } else {
// CHECK-NEXT: func.call @forward_prefill(%[[T]], %[[OUT]])
// CHECK: func.func private @forward_prefill({{.*}}) attributes {llmc.phase = "prefill"}
// CHECK: tl.for %{{.+}} = %c0 to %{{.+}} step %c1
// CHECK: tl.block "twice"
// CHECK: func.func private @forward_decode({{.*}}) attributes {llmc.phase = "decode"}
// CHECK-NOT: tl.for
// CHECK: tl.block "twice" (%{{.+}} = spatial %c0)
func.func @forward(%t: memref<?xi32>, %out: memref<?xf32>) attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %t, %c0 : memref<?xi32>
  tl.for %i = %c0 to %n step %c1 {
    tl.block "twice" (%v = spatial %i) reads(%t[%v] : memref<?xi32>) writes(%out[%v] : memref<?xf32>) {
      %a = affine.load %t[%v] : memref<?xi32>
      %f = arith.sitofp %a : i32 to f32
      %d = arith.addf %f, %f : f32
      affine.store %d, %out[%v] : memref<?xf32>
    }
  }
  return
}

// -----

// The entry's first argument must be the tokens, of a dynamic length.
// expected-error @+1 {{tl-specialize-decode: the first argument of @forward must be a memref with a dynamic first dimension}}
func.func @forward(%t: memref<4xi32>) {
  return
}
