// RUN: llm-opt %s -tl-schedule='script={fuse_launches(a, b)}' -tl-verify-parallel | FileCheck %s

// A layer's keys and values: two launches writing one view of the KV cache,
// at elements whose first index is a different constant: apart, so fused.
// CHECK-LABEL: func.func @kv
// CHECK: tl.for {{.*}} thread("blockIdx.x")
// CHECK: tl.block "a"
// CHECK: tl.block "b"
// CHECK-NOT: thread("blockIdx
// CHECK: return
func.func @kv(%k: memref<8xf32>, %v: memref<8xf32>, %kv: memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads(%k[%vt] : memref<8xf32>) writes(%kv[0, %vt] : memref<2x8xf32>) {
      %x = affine.load %k[symbol(%vt)] : memref<8xf32>
      affine.store %x, %kv[0, symbol(%vt)] : memref<2x8xf32>
    }
  }
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "b" (%vt = spatial %t) reads(%v[%vt] : memref<8xf32>) writes(%kv[1, %vt] : memref<2x8xf32>) {
      %x = affine.load %v[symbol(%vt)] : memref<8xf32>
      affine.store %x, %kv[1, symbol(%vt)] : memref<2x8xf32>
    }
  }
  return
}
