// RUN: llm-opt %s -tl-schedule='script={split(dot, 0, 2); reverse(dot, 1)}' | FileCheck %s

// reverse runs a loop backwards: its variable becomes extent - 1 - i (here
// the pair loop of a split, so each pair adds its odd element first, as
// VDPBF16PS does); a dynamic extent is a symbol of the expression.
// CHECK-LABEL: func.func @dot
// CHECK: tl.for %[[P:[a-z0-9_]+]] = %{{.+}} to %c2
// CHECK-NEXT: %[[R:.+]] = affine.apply #{{.+}}(%[[P]])
// CHECK: tl.block "dot" (%{{.+}} = reduce %{{.+}})
func.func @dot(%x: memref<64xf32>, %w: memref<64xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  tl.for %k = %c0 to %c64 step %c1 {
    tl.block "dot" (%vk = reduce %k)
        reads(%x[%vk] : memref<64xf32>, %w[%vk] : memref<64xf32>, %y[0] : memref<1xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %x[%vk] : memref<64xf32>
      %b = affine.load %w[%vk] : memref<64xf32>
      %s = affine.load %y[0] : memref<1xf32>
      %p = arith.mulf %a, %b : f32
      %r = arith.addf %s, %p : f32
      affine.store %r, %y[0] : memref<1xf32>
    }
  }
  return
}
