// RUN: llm-opt %s | llm-opt | FileCheck %s
// Round trip of tl loops (every kind) and blocks (regions, init).

// CHECK-LABEL: func.func @matmul
func.func @matmul(%A: memref<?x8xf32>, %B: memref<4x8xf32>, %C: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %A, %c0 : memref<?x8xf32>
  // CHECK: tl.for %[[I:.+]] = %{{.*}} to %{{.*}} step %{{.*}} kind(parallel) {
  tl.for %i = %c0 to %n step %c1 kind(parallel) {
    // CHECK: tl.for %[[J:.+]] = %{{.*}} to %{{.*}} step %{{.*}} kind(vectorized) {
    tl.for %j = %c0 to %c4 step %c1 kind(vectorized) {
      // CHECK: tl.for %[[K:.+]] = %{{.*}} to %{{.*}} step %{{.*}} {
      tl.for %k = %c0 to %c8 step %c1 {
        // CHECK: tl.block "matmul" (%[[VI:.+]] = spatial %[[I]], %[[VJ:.+]] = spatial %[[J]], %[[VK:.+]] = reduce %[[K]])
        // CHECK-SAME: reads(%{{[a-z0-9_]+}}[%[[VI]], %[[VK]]] : memref<?x8xf32>, %{{[a-z0-9_]+}}[%[[VJ]], %[[VK]]] : memref<4x8xf32>, %{{[a-z0-9_]+}}[%[[VI]], %[[VJ]]] : memref<?x4xf32>)
        // CHECK-SAME: writes(%{{[a-z0-9_]+}}[%[[VI]], %[[VJ]]] : memref<?x4xf32>) init {
        tl.block "matmul" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k)
            reads(%A[%vi, %vk] : memref<?x8xf32>, %B[%vj, %vk] : memref<4x8xf32>, %C[%vi, %vj] : memref<?x4xf32>)
            writes(%C[%vi, %vj] : memref<?x4xf32>) init {
          %zero = arith.constant 0.0 : f32
          // CHECK: affine.store
          affine.store %zero, %C[%vi, %vj] : memref<?x4xf32>
        } {
          %a = affine.load %A[%vi, %vk] : memref<?x8xf32>
          %b = affine.load %B[%vj, %vk] : memref<4x8xf32>
          %c = affine.load %C[%vi, %vj] : memref<?x4xf32>
          %p = arith.mulf %a, %b : f32
          %s = arith.addf %c, %p : f32
          affine.store %s, %C[%vi, %vj] : memref<?x4xf32>
        }
      }
    }
  }
  return
}

// CHECK-LABEL: func.func @kinds_and_maps
func.func @kinds_and_maps(%x: memref<16xf32>, %y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // CHECK: kind(thread_bound) thread("threadIdx.x")
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    // CHECK: kind(unrolled)
    tl.for %u = %c0 to %c1 step %c1 kind(unrolled) {
      // Two regions of one buffer: the pair (2i, 2i+1).
      // CHECK: tl.block "pairs" (%[[V:.+]] = spatial %{{.*}}) reads(%{{[a-z0-9_]+}}[%[[V]] * 2] : memref<16xf32>, %{{[a-z0-9_]+}}[%[[V]] * 2 + 1] : memref<16xf32>)
      tl.block "pairs" (%v = spatial %t) reads(%x[%v * 2] : memref<16xf32>, %x[%v * 2 + 1] : memref<16xf32>)
          writes(%y[%v * 2] : memref<16xf32>) {
        %a = affine.load %x[%v * 2] : memref<16xf32>
        %b = affine.load %x[%v * 2 + 1] : memref<16xf32>
        %s = arith.addf %a, %b : f32
        affine.store %s, %y[%v * 2] : memref<16xf32>
      }
    }
  }
  return
}

// -----

// A prefetch hint: bytes [offset + distance, + bytes) of the buffer, a
// request per line.
// CHECK-LABEL: func.func @prefetch
// CHECK: tl.prefetch %{{.+}}[%{{.+}}] {bytes = 2304 : i64, distance = 8192 : i64, level = 2 : i64, line = 64 : i64} : memref<48x6912xi8>
func.func @prefetch(%w: memref<48x6912xi8>, %i: index) {
  tl.prefetch %w[%i] {bytes = 2304 : i64, distance = 8192 : i64, level = 2 : i64, line = 64 : i64} : memref<48x6912xi8>
  return
}
