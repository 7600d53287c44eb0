// RUN: llm-opt %s -split-input-file -tl-schedule='script={library(matmul, 0)}' | FileCheck %s
// RUN: llm-opt %s -split-input-file -tl-schedule='script={library(matmul, 0)}' -tl-verify-parallel | FileCheck %s

// library marks a matrix band whose rows run to any bound (a prompt's
// tokens) as the GEMM library's: its three loops kind library; the
// tl-verify-parallel accepts it.
// CHECK-LABEL: func.func @prompt
// CHECK: tl.for {{.*}} to %arg3 step %c1 kind(library)
// CHECK-NEXT: tl.for {{.*}} to %c48 step %c1 kind(library)
// CHECK-NEXT: tl.for {{.*}} to %c64 step %c1 kind(library)
// CHECK-NEXT: tl.block "matmul"
func.func @prompt(%a: memref<?x64xf16>, %b: memref<48x64xf16>, %y: memref<?x48xf32>, %n: index) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c48 = arith.constant 48 : index
  %c64 = arith.constant 64 : index
  tl.for %r = %c0 to %n step %c1 {
    tl.for %c = %c0 to %c48 step %c1 {
      tl.for %k = %c0 to %c64 step %c1 {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<?x64xf16>, %b[%vc, %vk] : memref<48x64xf16>, %y[%vr, %vc] : memref<?x48xf32>) writes(%y[%vr, %vc] : memref<?x48xf32>) init {
          affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<?x48xf32>
        } {
          %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<?x64xf16>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<48x64xf16>
          %2 = arith.extf %0 : f16 to f32
          %3 = arith.extf %1 : f16 to f32
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<?x48xf32>
          %5 = arith.mulf %2, %3 : f32
          %6 = arith.addf %4, %5 : f32
          affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<?x48xf32>
        }
      }
    }
  }
  return
}
