// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={compute_inline(p)}'

func.func @reduction(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<1xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: tl.block 'p' has reduction variables}}
    tl.block "p" (%v = reduce %i) reads(%x[%v] : memref<4xf32>, %y[0] : memref<1xf32>) writes(%y[0] : memref<1xf32>) init {
      %z = arith.constant 0.0 : f32
      affine.store %z, %y[0] : memref<1xf32>
    } {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      %s = affine.load %y[0] : memref<1xf32>
      %t = arith.addf %a, %s : f32
      affine.store %t, %y[0] : memref<1xf32>
    }
  }
  return
}

// -----

func.func @two_writes(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c2 step %c1 {
    // expected-error @+1 {{compute_inline: tl.block 'p' has 2 write regions, not one}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v * 2] : memref<4xf32>, %y[%v * 2 + 1] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v) * 2] : memref<4xf32>
      affine.store %a, %y[symbol(%v) * 2 + 1] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @argument(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: the buffer tl.block 'p' writes is not an allocation of the function's own}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @reads_own(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: tl.block 'p' reads the buffer it writes}}
    tl.block "p" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      %b = arith.addf %a, %a : f32
      affine.store %b, %y[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @strided_write(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c2 step %c1 {
    // expected-error @+1 {{compute_inline: the write region of tl.block 'p' is not one variable per dimension, each variable once}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v * 2] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v) * 2] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @regions(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  %t = arith.constant true
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: the body of tl.block 'p' has an op with regions}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      %b = scf.if %t -> f32 {
        scf.yield %a : f32
      } else {
        scf.yield %a : f32
      }
      affine.store %b, %y[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @not_alone(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  %w = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: tl.block 'p' must be the only block of its loop nest}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v)] : memref<4xf32>
    }
    tl.block "q" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%w[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %w[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @consumer_writes(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: tl.block 'c' writes the buffer as well}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      %b = arith.addf %a, %a : f32
      affine.store %b, %y[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @copied(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: the buffer is used by memref.copy other than as an affine load over a block's variables}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v)] : memref<4xf32>
    }
  }
  memref.copy %y, %o : memref<4xf32> to memref<4xf32>
  return
}

// -----

func.func @unread(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: no block reads the buffer tl.block 'p' writes}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @consumer_first(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: tl.block 'c' is not in a loop nest after the producer's, in one block}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @clobbered(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: a block between it and its last consumer writes what it reads}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "w" (%v = spatial %i) reads() writes(%x[%v] : memref<4xf32>) {
      %z = arith.constant 0.0 : f32
      affine.store %z, %x[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @copy_between(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: an op between it and its last consumer (memref.copy) may write what it reads}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      affine.store %a, %y[symbol(%v)] : memref<4xf32>
    }
  }
  memref.copy %o, %x : memref<4xf32> to memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @loop_value(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    %f = arith.index_cast %i : index to i32
    %g = arith.sitofp %f : i32 to f32
    // expected-error @+1 {{compute_inline: a value tl.block 'p' uses is not defined before its consumers}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      %b = arith.mulf %a, %g : f32
      affine.store %b, %y[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}

// -----

func.func private @effect(f32) -> f32
func.func @call(%x: memref<4xf32>, %o: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %y = memref.alloc() : memref<4xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{compute_inline: the body of tl.block 'p' has an op with memory effects}}
    tl.block "p" (%v = spatial %i) reads(%x[%v] : memref<4xf32>) writes(%y[%v] : memref<4xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<4xf32>
      %b = func.call @effect(%a) : (f32) -> f32
      affine.store %b, %y[symbol(%v)] : memref<4xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "c" (%v = spatial %i) reads(%y[%v] : memref<4xf32>) writes(%o[%v] : memref<4xf32>) {
      %a = affine.load %y[symbol(%v)] : memref<4xf32>
      affine.store %a, %o[symbol(%v)] : memref<4xf32>
    }
  }
  return
}
