// RUN: llm-opt %s -tl-default-schedule="target=vulkan:1.3,subgroup=32" | FileCheck %s
// RUN: llm-opt %s -tl-default-schedule="target=cuda:sm_90" | FileCheck %s --check-prefix=CUDA
// RUN: llm-opt %s -tl-default-schedule="target=vulkan:1.3,subgroup=1" | FileCheck %s --check-prefix=TREE

// A decode product and the residual add after it are one launch on a GPU:
// the add goes into the product (its sums start at the residual, in the
// output), which the workgroup reduction then maps: the write-back reads the
// residual in its init and adds the lanes' total.
// CHECK-LABEL: func.func @residual
// CHECK-NOT: memref.alloc
// CHECK: tl.for {{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK: tl.block "matmul" ({{.*}}) reads({{.*}}%arg2{{.*}}) writes(%arg3
// CHECK: init {
// CHECK-NEXT: affine.load %arg2
// CHECK-NEXT: affine.store {{.*}}, %arg3
// CHECK-NOT: tl.block "add"
// CHECK: return
// On CUDA the lanes also read their rows 16 bytes at a time (the residual's
// read, which does not move along the reduction, does not stop it), and
// each workgroup takes 4 outputs, whose write-back stores the residual
// first.
// CUDA-LABEL: func.func @residual
// CUDA: kind(vectorized)
// CUDA: tl.block "matmul" ({{.*}}) reads({{.*}}%arg2{{.*}}) writes(%arg3
// CUDA-NEXT: %[[X:.*]] = affine.load %arg2
// CUDA-NEXT: affine.store %[[X]], %arg3
// CUDA-NOT: tl.block "add"
// Without subgroup sums (a tree in workgroup memory) the tree's last step
// takes the init, its read of the residual with it.
// TREE-LABEL: func.func @residual
// TREE: tl.block "matmul_tree5"
// TREE: tl.block "matmul" ({{.*}}) reads({{.*}}%arg2{{.*}}) writes(%arg3
// TREE: affine.load %arg2
// TREE-NOT: tl.block "add"
func.func @residual(%h: memref<1x256xf32>, %w: memref<32x256xf16>, %x: memref<1x32xf32>, %z: memref<1x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 256 : index
  %y = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c64 step %c1 {
      tl.block "matmul" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x256xf32>, %w[%vo, %vi] : memref<32x256xf16>, %y[%vt, %vo] : memref<1x32xf32>) writes(%y[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x256xf32>
        %1 = affine.load %w[symbol(%vo), symbol(%vi)] : memref<32x256xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    tl.block "add" (%vt = spatial %c0, %vo = spatial %o) reads(%x[%vt, %vo] : memref<1x32xf32>, %y[%vt, %vo] : memref<1x32xf32>) writes(%z[%vt, %vo] : memref<1x32xf32>) {
      %0 = affine.load %x[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %1 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %z[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
    }
  }
  return
}
