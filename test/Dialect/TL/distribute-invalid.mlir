// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={distribute(b, 0)}'

func.func @one_part(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{distribute: the loop's body has 1 loop nests or blocks, not two or more}}
  tl.for %h = %c0 to %c4 step %c1 {
    tl.block "b" (%v = spatial %h) reads(%x[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @strided(%x: memref<8xf32>, %o: memref<8xf32>, %p: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{distribute: the loop must start at 0 with step 1}}
  tl.for %h = %c0 to %c8 step %c2 {
    tl.block "a" (%v = spatial %h) reads(%x[%v] : memref<8xf32>) writes(%o[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %o[symbol(%v)] : memref<8xf32>
    }
    tl.block "b" (%v = spatial %h) reads(%o[%v] : memref<8xf32>) writes(%p[%v] : memref<8xf32>) {
      %a = affine.load %o[symbol(%v)] : memref<8xf32>
      affine.store %a, %p[symbol(%v)] : memref<8xf32>
    }
  }
  return
}

// -----

// A running total over the loop: iteration h + 1 reads what h wrote.
func.func @carried(%x: memref<4xf32>, %t: memref<1xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @+1 {{distribute:}}
  tl.for %h = %c0 to %c4 step %c1 {
    // expected-note @+1 {{}}
    tl.block "a" (%v = reduce %h) reads(%x[%v] : memref<4xf32>, %t[0] : memref<1xf32>) writes(%t[0] : memref<1xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      %b = affine.load %t[0] : memref<1xf32>
      %c = arith.addf %a, %b : f32
      affine.store %c, %t[0] : memref<1xf32>
    }
    tl.block "b" (%v = spatial %h) reads(%t[0] : memref<1xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %t[0] : memref<1xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @shared_scratch(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tl.for %h = %c0 to %c4 step %c1 {
    // expected-error @+1 {{distribute: a stack buffer of the loop's body is used by more than one part}}
    %t = memref.alloca() : memref<1xf32>
    tl.block "a" (%v = spatial %h) reads(%x[%v] : memref<4xf32>) writes(%t[0] : memref<1xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %t[0] : memref<1xf32>
    }
    tl.block "b" (%v = spatial %h) reads(%t[0] : memref<1xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %t[0] : memref<1xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @copy(%x: memref<4xf32>, %o: memref<4xf32>, %p: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tl.for %h = %c0 to %c4 step %c1 {
    tl.block "a" (%v = spatial %h) reads(%x[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
    // expected-error @+1 {{distribute: memref.copy in the loop's body is neither a loop nor a block nor a scalar op without effects}}
    memref.copy %o, %p : memref<4xf32> to memref<4xf32>
    tl.block "b" (%v = spatial %h) reads(%o[%v] : memref<4xf32>) writes(%p[%v] : memref<4xf32>) {
      %a = affine.load %o[symbol(%v)] : memref<4xf32>
      affine.store %a, %p[symbol(%v)] : memref<4xf32>
    }
  }
  return
}
