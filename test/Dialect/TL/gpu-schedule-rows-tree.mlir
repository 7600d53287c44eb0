// RUN: llm-opt %s -tl-default-schedule="target=vulkan:1.3,subgroup=16" -tl-outline-kernels -convert-tl-to-gpu | FileCheck %s

// A quantized decode matmul's shape (24 blocks of 32 products an output):
// 8 lanes (the largest power of two dividing 24), too few for each to get
// 4 blocks of one output, so two outputs a workgroup; subgroups of 16 do
// not divide the 8 lanes, so each output's partials are summed in a tree.
// The rows' loop holds the tree's levels and the write as steps of the
// workgroup (a barrier before each), not one thread running them all.
// CHECK-LABEL: gpu.func @rows_tree.matmul
// CHECK-SAME: workgroup(%[[P:.*]] : memref<2x8xf32, #gpu.address_space<workgroup>>)
// CHECK-SAME: known_block_size = array<i32: 8, 1, 1>
// Each lane's two sums (registers) into its partials, once:
// CHECK: memref.store %{{.*}}, %[[P]][%c0, %thread_id_x]
// CHECK: memref.store %{{.*}}, %[[P]][%c1, %thread_id_x]
// CHECK-NEXT: scf.for %[[ROW:.*]] = %c0 to %c2 step %c1 {
// CHECK: gpu.barrier
// CHECK: %[[T0:.*]] = gpu.thread_id x
// CHECK: arith.cmpi ult, %[[T0]], %c4
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: gpu.barrier
// CHECK: %[[T3:.*]] = gpu.thread_id x
// CHECK: %[[ONE:.*]] = arith.cmpi ult, %[[T3]], %c1
// CHECK: scf.if %[[ONE]] {
// CHECK: memref.load %[[P]][%[[ROW]], %c0]
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return
func.func @rows_tree(%x: memref<1x768xf32>, %w: memref<64x768xf32>, %y: memref<1x64xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c24 = arith.constant 24 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  tl.for %o = %c0 to %c64 step %c1 {
    tl.for %kb = %c0 to %c24 step %c1 {
      tl.for %ki = %c0 to %c32 step %c1 {
        tl.block "matmul" (%vo = spatial %o, %vb = reduce %kb, %vi = reduce %ki) reads(%x[0, %vb * 32 + %vi] : memref<1x768xf32>, %w[%vo, %vb * 32 + %vi] : memref<64x768xf32>, %y[0, %vo] : memref<1x64xf32>) writes(%y[0, %vo] : memref<1x64xf32>) init {
          affine.store %cst, %y[0, symbol(%vo)] : memref<1x64xf32>
        } {
          %0 = affine.load %x[0, symbol(%vb) * 32 + symbol(%vi)] : memref<1x768xf32>
          %1 = affine.load %w[symbol(%vo), symbol(%vb) * 32 + symbol(%vi)] : memref<64x768xf32>
          %2 = affine.load %y[0, symbol(%vo)] : memref<1x64xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %y[0, symbol(%vo)] : memref<1x64xf32>
        }
      }
    }
  }
  return
}
