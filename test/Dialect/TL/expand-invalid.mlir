// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={expand(p, 0, 0)}'

func.func @dynamic(%x: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{expand: the loop's extent must be a constant}}
  tl.for %i = %c0 to %n step %c1 {
    %acc = memref.alloca() : memref<1xf32>
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<?xf32>) writes(%acc[0] : memref<1xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<?xf32>
      affine.store %a, %acc[0] : memref<1xf32>
    }
  }
  return
}

// -----

func.func @not_stack(%x: memref<4xf32>, %o: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{expand: the buffer must be a stack buffer allocated directly in the loop's body}}
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%o[0] : memref<1xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[0] : memref<1xf32>
    }
  }
  return
}

// -----

func.func @copied(%x: memref<4xf32>, %o: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tl.for %i = %c0 to %c4 step %c1 {
    %acc = memref.alloca() : memref<1xf32>
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%acc[0] : memref<1xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %acc[0] : memref<1xf32>
    }
    // expected-error @+1 {{expand: the stack buffer is used by memref.copy, not by a block's accesses}}
    memref.copy %acc, %o : memref<1xf32> to memref<1xf32>
  }
  return
}

// -----

// The block's variable is the loop's times 2: no slice per iteration.
func.func @no_var(%x: memref<8xf32>, %o: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  tl.for %i = %c0 to %c4 step %c1 {
    %j = arith.muli %i, %c2 : index
    %acc = memref.alloca() : memref<1xf32>
    // expected-error @+1 {{expand: no iteration variable of tl.block 'p' is the loop's variable plus multiples of its extent 4}}
    tl.block "p" (%v = spatial %j) reads(%x[%v] : memref<8xf32>) writes(%acc[0] : memref<1xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %acc[0] : memref<1xf32>
    }
  }
  return
}

// -----

func.func @strided(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{expand: the loop must start at 0 with step 1}}
  tl.for %i = %c0 to %c8 step %c2 {
    %acc = memref.alloca() : memref<1xf32>
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%acc[0] : memref<1xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %acc[0] : memref<1xf32>
    }
  }
  return
}
