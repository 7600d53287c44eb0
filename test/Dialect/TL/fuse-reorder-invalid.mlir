// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={fuse(r, 0, 1)}'
// RUN: not llm-opt %s -tl-schedule='script={reorder(r, 1, 0)}' 2>&1 | FileCheck %s --check-prefix=REORDER

// A causal nest: the inner loop's extent depends on the outer loop's
// variable, so the two are not one loop of extent n * m (fuse) and cannot
// trade places (reorder).
// REORDER: :[[@LINE+8]]:5: error: reorder: the bounds of this loop depend on another loop of the nest
func.func @causal(%x: memref<4x4xf32>, %y: memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tl.for %i = %c0 to %c4 step %c1 {
    %end = arith.addi %i, %c1 : index
    // expected-error @+1 {{fuse: the extent of this loop depends on another loop of the nest}}
    tl.for %j = %c0 to %end step %c1 {
      tl.block "r" (%vi = spatial %i, %vj = spatial %j) reads(%x[%vi, %vj] : memref<4x4xf32>) writes(%y[%vi, %vj] : memref<4x4xf32>) {
        %a = affine.load %x[%vi, %vj] : memref<4x4xf32>
        affine.store %a, %y[%vi, %vj] : memref<4x4xf32>
      }
    }
  }
  return
}
