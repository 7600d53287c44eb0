// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=vulkan" | FileCheck %s
// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=vulkan:1.3,subgroup=128,workgroup=512" | FileCheck %s --check-prefix=WIDE

// The GPU targets' default schedule: each nest one launch, its independent
// top loops on the grid (the innermost split into workgroups x threads,
// the others on blockIdx.y/z), the rest serial in each thread.

// A decode matmul's 64 rows: one workgroup of 64 threads, the reduction
// serial in each.
// CHECK-LABEL: func.func @decode
// CHECK: tl.for %[[N:.*]] = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for {{.*}} to %c256 step %c1 {
// CHECK-NEXT: tl.block "matmul"
// A subgroup of 128 threads: the workgroup is a subgroup at least, so 64
// rows are one workgroup of 64 (the loop is no longer).
// WIDE-LABEL: func.func @decode
// WIDE: kind(thread_bound) thread("threadIdx.x")
func.func @decode(%x: memref<1x256xf32>, %w: memref<64x256xf32>, %y: memref<1x64xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c64 = arith.constant 64 : index
  tl.for %n = %c0 to %c64 step %c1 {
    tl.for %k = %c0 to %c256 step %c1 {
      tl.block "matmul" (%t = spatial %c0, %r = spatial %n, %kk = reduce %k) reads(%x[%t, %kk] : memref<1x256xf32>, %w[%r, %kk] : memref<64x256xf32>, %y[%t, %r] : memref<1x64xf32>) writes(%y[%t, %r] : memref<1x64xf32>) init {
        affine.store %cst, %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
      } {
        %0 = affine.load %x[symbol(%t), symbol(%kk)] : memref<1x256xf32>
        %1 = affine.load %w[symbol(%r), symbol(%kk)] : memref<64x256xf32>
        %2 = affine.load %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 : f32
        affine.store %4, %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
      }
    }
  }
  return
}

// -----

// Tokens (dynamic) and 1000 columns: the tokens on blockIdx.y, the columns
// in workgroups of 64 threads on blockIdx.x, the last one partly idle (its
// threads past the end run nothing: the split's bound).
// CHECK-LABEL: func.func @add
// CHECK: tl.for {{.*}} to %{{.*}} step %c1 kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK: %[[REST:.*]] = arith.minui
// CHECK: tl.for {{.*}} to %[[REST]] {{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "add"
// WIDE-LABEL: func.func @add
// WIDE: tl.for {{.*}} to %c8{{.*}} kind(thread_bound) thread("blockIdx.x")
func.func @add(%a: memref<?x1000xf32>, %b: memref<?x1000xf32>, %c: memref<?x1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %n = memref.dim %a, %c0 : memref<?x1000xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.for %j = %c0 to %c1000 step %c1 {
      tl.block "add" (%ii = spatial %i, %jj = spatial %j) reads(%a[%ii, %jj] : memref<?x1000xf32>, %b[%ii, %jj] : memref<?x1000xf32>) writes(%c[%ii, %jj] : memref<?x1000xf32>) {
        %0 = affine.load %a[symbol(%ii), symbol(%jj)] : memref<?x1000xf32>
        %1 = affine.load %b[symbol(%ii), symbol(%jj)] : memref<?x1000xf32>
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %c[symbol(%ii), symbol(%jj)] : memref<?x1000xf32>
      }
    }
  }
  return
}

// -----

// A reduction at the top (no independent loop): one thread, through a loop
// of one iteration put around the nest.
// CHECK-LABEL: func.func @sum
// CHECK: tl.for %{{.*}} = %c0{{.*}} to %c1{{.*}} step %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for {{.*}} to %c256 step %c1 {
// CHECK-NEXT: tl.block "sum"
func.func @sum(%x: memref<256xf32>, %s: memref<1xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  tl.for %k = %c0 to %c256 step %c1 {
    tl.block "sum" (%z = spatial %c0, %kk = reduce %k) reads(%x[%kk] : memref<256xf32>, %s[%z] : memref<1xf32>) writes(%s[%z] : memref<1xf32>) init {
      affine.store %cst, %s[symbol(%z)] : memref<1xf32>
    } {
      %0 = affine.load %x[symbol(%kk)] : memref<256xf32>
      %1 = affine.load %s[symbol(%z)] : memref<1xf32>
      %2 = arith.addf %1, %0 : f32
      affine.store %2, %s[symbol(%z)] : memref<1xf32>
    }
  }
  return
}
