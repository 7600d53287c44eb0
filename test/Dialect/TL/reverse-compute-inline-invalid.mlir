// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={reverse_compute_inline(add)}'

// The producer of what "add" reads is a reduction: it stores partial sums.
func.func @reduction(%x: memref<8x4xf32>, %r: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %b = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.for %k = %c0 to %c4 step %c1 {
      tl.block "sum" (%v = spatial %i, %vk = reduce %k) reads(%x[%v, %vk] : memref<8x4xf32>, %b[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) init {
        %z = arith.constant 0.0 : f32
        affine.store %z, %b[symbol(%v)] : memref<8xf32>
      } {
        %a = affine.load %x[symbol(%v), symbol(%vk)] : memref<8x4xf32>
        %s = affine.load %b[symbol(%v)] : memref<8xf32>
        %t = arith.addf %s, %a : f32
        affine.store %t, %b[symbol(%v)] : memref<8xf32>
      }
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    // expected-error @+1 {{reverse_compute_inline: its producer tl.block 'sum' has reduction variables}}
    tl.block "add" (%v = spatial %i) reads(%r[%v] : memref<8xf32>, %b[%v] : memref<8xf32>) writes(%out[%v] : memref<8xf32>) {
      %a = affine.load %r[symbol(%v)] : memref<8xf32>
      %p = affine.load %b[symbol(%v)] : memref<8xf32>
      %s = arith.addf %a, %p : f32
      affine.store %s, %out[symbol(%v)] : memref<8xf32>
    }
  }
  return
}

// -----

// What "add" reads is an argument: its producer's stores are seen outside.
func.func @argument(%x: memref<8xf32>, %b: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "copy" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %b[symbol(%v)] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    // expected-error @+1 {{reverse_compute_inline: tl.block 'add' reads no buffer of the function's own that a single other block writes, one variable per dimension}}
    tl.block "add" (%v = spatial %i) reads(%x[%v] : memref<8xf32>, %b[%v] : memref<8xf32>) writes(%out[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      %p = affine.load %b[symbol(%v)] : memref<8xf32>
      %s = arith.addf %a, %p : f32
      affine.store %s, %out[symbol(%v)] : memref<8xf32>
    }
  }
  return
}

// -----

// "add" covers half of the buffer: computing it at every store would write
// elements it never wrote.
func.func @partial(%x: memref<8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %b = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "copy" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %b[symbol(%v)] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{reverse_compute_inline: its loops do not run over the whole buffer it reads}}
    tl.block "add" (%v = spatial %i) reads(%b[%v] : memref<8xf32>) writes(%out[%v] : memref<4xf32>) {
      %p = affine.load %b[symbol(%v)] : memref<8xf32>
      %s = arith.addf %p, %p : f32
      affine.store %s, %out[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

// The producer writes both buffers "add" reads: inside the producer the
// other one would not be complete yet.
func.func @two_outputs(%x: memref<8xf32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %b = memref.alloc() : memref<8xf32>
  %c = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "two" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>, %c[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %b[symbol(%v)] : memref<8xf32>
      affine.store %a, %c[symbol(%v)] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    // expected-error @+1 {{reverse_compute_inline: its producer tl.block 'two' writes another buffer it reads}}
    tl.block "add" (%v = spatial %i) reads(%b[%v] : memref<8xf32>, %c[%v] : memref<8xf32>) writes(%out[%v] : memref<8xf32>) {
      %p = affine.load %b[symbol(%v)] : memref<8xf32>
      %q = affine.load %c[symbol(%v)] : memref<8xf32>
      %s = arith.addf %p, %q : f32
      affine.store %s, %out[symbol(%v)] : memref<8xf32>
    }
  }
  return
}
