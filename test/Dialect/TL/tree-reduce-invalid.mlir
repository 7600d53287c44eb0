// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={tree_reduce(r)}'

// tree_reduce combines stack partials over a power-of-two lane loop.
func.func @not_power_of_two(%p: memref<6xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %parts = memref.alloca() : memref<6xf32>
  tl.for %l = %c0 to %c6 step %c1 {
    // expected-error @+1 {{tree_reduce: the reduction loop needs a constant power-of-two extent}}
    tl.block "r" (%vl = reduce %l) reads(%y[0] : memref<1xf32>, %parts[%vl] : memref<6xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %y[0] : memref<1xf32>
      %b = affine.load %parts[%vl] : memref<6xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %y[0] : memref<1xf32>
    }
  }
  return
}

// -----

// The partials must be a stack buffer of the schedule's own (they are
// overwritten in place).
func.func @not_partials(%p: memref<8xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %l = %c0 to %c8 step %c1 {
    // expected-error @+1 {{tree_reduce: the combined value must be read from a stack buffer of partials}}
    tl.block "r" (%vl = reduce %l) reads(%y[0] : memref<1xf32>, %p[%vl] : memref<8xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %y[0] : memref<1xf32>
      %b = affine.load %p[%vl] : memref<8xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %y[0] : memref<1xf32>
    }
  }
  return
}

// -----

func.func @no_reduction(%y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %l = %c0 to %c8 step %c1 {
    // expected-error @+1 {{tree_reduce: tl.block 'r' has no reduction variable}}
    tl.block "r" (%vl = spatial %l) reads() writes(%y[%vl] : memref<8xf32>) {
      %z = arith.constant 0.0 : f32
      affine.store %z, %y[%vl] : memref<8xf32>
    }
  }
  return
}

