// RUN: llm-opt %s -verify-diagnostics -tl-schedule='script={tree_reduce(s, 3)}'

// A segment must be a power of two no wider than the lanes (here 3 of 8).
func.func @bad_segment(%y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %parts = memref.alloca() : memref<8xf32>
  tl.for %l = %c0 to %c8 step %c1 {
    // expected-error @+1 {{tree_reduce: the segment must be a power of two from 2 to the lane count (8)}}
    tl.block "s" (%vl = reduce %l) reads(%y[0] : memref<1xf32>, %parts[%vl] : memref<8xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %y[0] : memref<1xf32>
      %b = affine.load %parts[%vl] : memref<8xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %y[0] : memref<1xf32>
    }
  }
  return
}
