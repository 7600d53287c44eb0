// RUN: llm-opt %s -split-input-file -verify-diagnostics \
// RUN:   -tl-schedule='script={rfactor(r, 1)}'

// Each precondition of rfactor, with the IR left as it was.

// The update must be acc = combine(acc, x).
func.func @not_an_update(%x: memref<4x8xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %i = %c0 to %c4 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      // expected-error @+1 {{rfactor: the update of tl.block 'r' is not `acc = combine(acc, x)` of its one output}}
      tl.block "r" (%vi = spatial %i, %vk = reduce %k)
          reads(%x[%vi, %vk] : memref<4x8xf32>, %y[%vi] : memref<4xf32>)
          writes(%y[%vi] : memref<4xf32>) {
        %a = affine.load %x[%vi, %vk] : memref<4x8xf32>
        %s = affine.load %y[%vi] : memref<4xf32>
        %p = arith.subf %s, %a : f32
        affine.store %p, %y[%vi] : memref<4xf32>
      }
    }
  }
  return
}

// -----

// A lane loop needs a constant extent.
func.func @dynamic_lanes(%x: memref<4x?xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %x, %c1 : memref<4x?xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    tl.for %k = %c0 to %n step %c1 {
      // expected-error @+1 {{rfactor: a lane loop must start at 0 with step 1 and have a constant extent}}
      tl.block "r" (%vi = spatial %i, %vk = reduce %k)
          reads(%x[%vi, %vk] : memref<4x?xf32>, %y[%vi] : memref<4xf32>)
          writes(%y[%vi] : memref<4xf32>) {
        %a = affine.load %x[%vi, %vk] : memref<4x?xf32>
        %s = affine.load %y[%vi] : memref<4xf32>
        %p = arith.addf %s, %a : f32
        affine.store %p, %y[%vi] : memref<4xf32>
      }
    }
  }
  return
}

// -----

// A loop of the reduction may not bind both kinds of variables.
func.func @mixed(%x: memref<8x8x8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %k = %c0 to %c8 step %c1 {
    tl.for %l = %c0 to %c8 step %c1 {
      tl.for %j = %c0 to %c8 step %c1 {
        // expected-error @+1 {{rfactor: a loop of the reduction binds both spatial and reduction variables}}
        tl.block "r" (%vk = reduce %k, %vl = reduce %l, %vj = spatial %j, %vd = reduce %j)
            reads(%x[%vk, %vl, %vd] : memref<8x8x8xf32>, %y[%vj] : memref<8xf32>)
            writes(%y[%vj] : memref<8xf32>) {
          %a = affine.load %x[%vk, %vl, %vd] : memref<8x8x8xf32>
          %s = affine.load %y[%vj] : memref<8xf32>
          %p = arith.addf %s, %a : f32
          affine.store %p, %y[%vj] : memref<8xf32>
        }
      }
    }
  }
  return
}

// -----

// The lane loop must bind the reduction, not an output.
func.func @spatial_lane(%x: memref<4x64xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  tl.for %r = %c0 to %c4 step %c1 {
    tl.for %k = %c0 to %c64 step %c1 {
      // expected-error @+1 {{rfactor: a lane loop must bind only reduction variables of tl.block 'r'}}
      tl.block "r" (%vr = reduce %r, %vk = spatial %k)
          reads(%x[%vr, %vk] : memref<4x64xf32>, %y[%vk] : memref<64xf32>)
          writes(%y[%vk] : memref<64xf32>) {
        %a = affine.load %x[%vr, %vk] : memref<4x64xf32>
        %s = affine.load %y[%vk] : memref<64xf32>
        %p = arith.addf %s, %a : f32
        affine.store %p, %y[%vk] : memref<64xf32>
      }
    }
  }
  return
}

// -----

// No other block under the reduction may touch the output.
func.func @shared_output(%x: memref<4x8xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %i = %c0 to %c4 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      // expected-error @+1 {{rfactor: another block inside the reduction accesses the output of tl.block 'r'}}
      tl.block "r" (%vi = spatial %i, %vk = reduce %k)
          reads(%x[%vi, %vk] : memref<4x8xf32>, %y[%vi] : memref<4xf32>)
          writes(%y[%vi] : memref<4xf32>) {
        %a = affine.load %x[%vi, %vk] : memref<4x8xf32>
        %s = affine.load %y[%vi] : memref<4xf32>
        %p = arith.addf %s, %a : f32
        affine.store %p, %y[%vi] : memref<4xf32>
      }
      tl.block "peek" (%vi = spatial %i) reads(%y[%vi] : memref<4xf32>)
          writes(%x[%vi, 0] : memref<4x8xf32>) {
        %s = affine.load %y[%vi] : memref<4xf32>
        affine.store %s, %x[%vi, 0] : memref<4x8xf32>
      }
    }
  }
  return
}
