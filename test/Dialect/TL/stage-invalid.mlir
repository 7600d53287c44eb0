// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={stage(p, 0, 0)}'

// A region not linear in the loop under the staged one (x[(t + k) / 2]):
// its extent is not a sum of the loop's steps.
func.func @halves(%x: memref<19xf32>, %y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  tl.for %t = %c0 to %c16 step %c1 {
    tl.for %k = %c0 to %c4 step %c1 {
      // expected-error @+1 {{stage: the read region is not linear in the loops under the loop}}
      tl.block "p" (%vt = spatial %t, %vk = reduce %k) reads(%x[(%vt + %vk) floordiv 2] : memref<19xf32>, %y[%vt] : memref<16xf32>) writes(%y[%vt] : memref<16xf32>) init {
        %z = arith.constant 0.0 : f32
        affine.store %z, %y[symbol(%vt)] : memref<16xf32>
      } {
        %a = affine.load %x[(symbol(%vt) + symbol(%vk)) floordiv 2] : memref<19xf32>
        %s = affine.load %y[symbol(%vt)] : memref<16xf32>
        %r = arith.addf %s, %a : f32
        affine.store %r, %y[symbol(%vt)] : memref<16xf32>
      }
    }
  }
  return
}

// -----

// Another block under the loop writes the buffer: a copy made at the start
// of an iteration would be stale.
func.func @written(%x: memref<16xf32>, %y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  tl.for %t = %c0 to %c16 step %c1 {
    tl.block "w" (%v = spatial %t) reads() writes(%x[%v] : memref<16xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %x[symbol(%v)] : memref<16xf32>
    }
    // expected-error @+1 {{stage: the buffer is written under the loop; a copy made at the start of an iteration would be stale}}
    tl.block "p" (%v = spatial %t) reads(%x[%v] : memref<16xf32>) writes(%y[%v] : memref<16xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<16xf32>
      affine.store %a, %y[symbol(%v)] : memref<16xf32>
    }
  }
  return
}

// -----

// The block reads the buffer through two regions: staging one would leave
// the other reading a buffer the copy does not hold.
func.func @undeclared(%x: memref<16xf32>, %y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 {
    // expected-error @+1 {{stage: tl.block 'p' accesses the buffer other than by loads of its declared read region}}
    tl.block "p" (%v = spatial %t) reads(%x[%v * 2] : memref<16xf32>, %x[%v * 2 + 1] : memref<16xf32>) writes(%y[%v] : memref<16xf32>) {
      %a = affine.load %x[symbol(%v) * 2] : memref<16xf32>
      %b = affine.load %x[symbol(%v) * 2 + 1] : memref<16xf32>
      %s = arith.addf %a, %b : f32
      affine.store %s, %y[symbol(%v)] : memref<16xf32>
    }
  }
  return
}

// -----

// A dimension that moves with a loop of a spatial variable (t) and one of a
// reduction variable (k): its offset would be neither kind (the init, run
// where every reduction variable is 0, would miss elements).
func.func @mixed(%x: memref<12xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  tl.for %i = %c0 to %c2 step %c1 {
    tl.for %t = %c0 to %c4 step %c1 {
      tl.for %k = %c0 to %c4 step %c1 {
        %b = arith.muli %i, %c4 : index
        %v = arith.addi %b, %t : index
        // expected-error @+1 {{stage: dimension 0 of the read region moves with loops of both spatial and reduction variables}}
        tl.block "p" (%vt = spatial %v, %vk = reduce %k) reads(%x[%vt + %vk] : memref<12xf32>, %y[%vt] : memref<8xf32>) writes(%y[%vt] : memref<8xf32>) init {
          %z = arith.constant 0.0 : f32
          affine.store %z, %y[symbol(%vt)] : memref<8xf32>
        } {
          %a = affine.load %x[symbol(%vt) + symbol(%vk)] : memref<12xf32>
          %s = affine.load %y[symbol(%vt)] : memref<8xf32>
          %r = arith.addf %s, %a : f32
          affine.store %r, %y[symbol(%vt)] : memref<8xf32>
        }
      }
    }
  }
  return
}
