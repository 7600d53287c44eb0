// RUN: llm-opt %s -split-input-file -tl-schedule='script={fuse_launches(q, k, r)}' -tl-verify-parallel -canonicalize | FileCheck %s

// Three launches of one input, each writing its own buffer (a decode step's
// Q, K and a one-workgroup nest): one launch of 4 + 2 + 1 workgroups on
// blockIdx.x. Each part runs under a guard of zero or one iteration whose
// bounds depend on the workgroup only (max(w, offset) to min(w + 1, end)),
// its grid index the fused one less its offset (K's wide axis was
// blockIdx.y; its other axis, of one workgroup, is 0); the workgroup's
// stack buffers move before the guards; the view between the launches moves
// before them. tl-verify-parallel accepts the fused launch (its parts apart,
// each part's workgroups independent over the fused index).
// CHECK-LABEL: func.func @qkr
// CHECK: memref.subview
// CHECK: tl.for %[[W:.*]] = %c0 to %c7 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK: %[[N0:.*]] = arith.addi %[[W]], %c1
// CHECK: %[[E0:.*]] = arith.minui %[[N0]], %c4
// CHECK: memref.alloca() : memref<8xf32>
// CHECK: tl.for %{{.*}} = %[[W]] to %[[E0]] step %c1 {
// CHECK: tl.for %[[TQ:.*]] = {{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "q" (%{{.*}} = spatial %[[W]], %{{.*}} = spatial %[[TQ]])
// CHECK: %[[L1:.*]] = arith.maxui %[[W]], %c4
// CHECK: %[[N1:.*]] = arith.addi %[[W]], %c1
// CHECK: %[[E1:.*]] = arith.minui %[[N1]], %c6
// CHECK: tl.for %{{.*}} = %[[L1]] to %[[E1]] step %c1 {
// CHECK: %[[K:.*]] = arith.subi %[[W]], %c4
// CHECK: tl.block "k" (%{{.*}} = spatial %[[K]], %{{.*}} = spatial %c0, %{{.*}} = spatial %{{.*}})
// CHECK: %[[L2:.*]] = arith.maxui %[[W]], %c6
// CHECK: %[[N2:.*]] = arith.addi %[[W]], %c1
// CHECK: tl.for %{{.*}} = %[[L2]] to %[[N2]] step %c1 {
// CHECK: tl.block "r"
// CHECK-NOT: tl.for {{.*}} thread("blockIdx
// CHECK: return
func.func @qkr(%x: memref<8xf32>, %q: memref<32xf32>, %kv: memref<2x16xf32>, %r: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    %p = memref.alloca() : memref<8xf32>
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "q" (%vb = spatial %b, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%q[%vb * 8 + %vt] : memref<32xf32>, %p[%vt] : memref<8xf32>) {
        %v = affine.load %x[symbol(%vt)] : memref<8xf32>
        affine.store %v, %p[symbol(%vt)] : memref<8xf32>
        affine.store %v, %q[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
      }
    }
  }
  %k = memref.subview %kv[0, 0] [1, 16] [1, 1] : memref<2x16xf32> to memref<16xf32, strided<[1]>>
  tl.for %y = %c0 to %c2 step %c1 kind(thread_bound) thread("blockIdx.y") {
    tl.for %b = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
      tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "k" (%vy = spatial %y, %vb = spatial %b, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%k[%vy * 8 + %vb + %vt] : memref<16xf32, strided<[1]>>) {
          %v = affine.load %x[symbol(%vt)] : memref<8xf32>
          affine.store %v, %k[symbol(%vy) * 8 + symbol(%vb) + symbol(%vt)] : memref<16xf32, strided<[1]>>
        }
      }
    }
  }
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "r" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%r[%vt] : memref<8xf32>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %r[symbol(%vt)] : memref<8xf32>
    }
  }
  return
}
