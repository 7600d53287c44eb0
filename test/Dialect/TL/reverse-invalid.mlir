// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={reverse(r, 0)}'

// A loop that does not enumerate a block's iterations (here it repeats
// the block) cannot be reversed.
func.func @unbound(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{reverse: a tl.block under the loop does not bind its variable}}
  tl.for %i = %c0 to %c4 step %c1 {
    tl.for %j = %c0 to %c4 step %c1 {
      // expected-note @+1 {{tl.block 'r'}}
      tl.block "r" (%vj = spatial %j) reads(%x[%vj] : memref<4xf32>) writes(%y[%vj] : memref<4xf32>) {
        %a = affine.load %x[%vj] : memref<4xf32>
        affine.store %a, %y[%vj] : memref<4xf32>
      }
    }
  }
  return
}

// -----

// Only normalised loops (from 0, step 1) are reversed.
func.func @strided(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{reverse: the loop must start at 0 with step 1}}
  tl.for %i = %c0 to %c8 step %c2 {
    tl.block "r" (%vi = spatial %i) reads(%x[%vi] : memref<8xf32>) writes(%y[%vi] : memref<8xf32>) {
      %a = affine.load %x[%vi] : memref<8xf32>
      affine.store %a, %y[%vi] : memref<8xf32>
    }
  }
  return
}
