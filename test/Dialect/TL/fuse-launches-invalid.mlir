// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={fuse_launches(a, b)}'
// RUN: not llm-opt %s -split-input-file -tl-schedule='script={fuse_launches(a)}' 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: not llm-opt %s -split-input-file -tl-schedule='script={fuse_launches(a, a)}' 2>&1 | FileCheck %s --check-prefix=TWICE

// ONE: error: fuse_launches: needs two launches or more
// TWICE: error: fuse_launches: names this launch twice

// The second launch reads what the first writes: fused, its workgroups
// could run before the first's.
func.func @dependent(%x: memref<8xf32>, %y: memref<32xf32>, %z: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  // expected-note @+1 {{the other launch}}
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "a" (%vb = spatial %b, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vb * 8 + %vt] : memref<32xf32>) {
        %v = affine.load %x[symbol(%vt)] : memref<8xf32>
        affine.store %v, %y[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
      }
    }
  }
  // expected-error @+1 {{fuse_launches: this launch accesses a buffer that another of the launches writes}}
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "b" (%vb = spatial %b, %vt = spatial %t) reads(%y[%vb * 8 + %vt] : memref<32xf32>) writes(%z[%vb * 8 + %vt] : memref<32xf32>) {
        %v = affine.load %y[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
        affine.store %v, %z[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
      }
    }
  }
  return
}

// -----

// A grid of more than one workgroup on two axes (the fused index would be
// split by a division the analysis cannot follow).
func.func @two_axes(%x: memref<8xf32>, %y: memref<32xf32>, %z: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "a" (%vb = spatial %b, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vb * 8 + %vt] : memref<32xf32>) {
        %v = affine.load %x[symbol(%vt)] : memref<8xf32>
        affine.store %v, %y[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
      }
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: its grid has more than one workgroup on two axes}}
  tl.for %h = %c0 to %c2 step %c1 kind(thread_bound) thread("blockIdx.y") {
    tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
      tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "b" (%vh = spatial %h, %vb = spatial %b, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%z[%vh * 32 + %vb * 8 + %vt] : memref<64xf32>) {
          %v = affine.load %x[symbol(%vt)] : memref<8xf32>
          affine.store %v, %z[symbol(%vh) * 32 + symbol(%vb) * 8 + symbol(%vt)] : memref<64xf32>
        }
      }
    }
  }
  return
}

// -----

// Another launch between them, not one of those fused.
func.func @launch_between(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<8xf32>, %w: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vt] : memref<8xf32>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %y[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: tl.for lies between the launches}}
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "c" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%w[%vt] : memref<8xf32>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %w[symbol(%vt)] : memref<8xf32>
    }
  }
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "b" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%z[%vt] : memref<8xf32>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %z[symbol(%vt)] : memref<8xf32>
    }
  }
  return
}

// -----

// A workgroup whose threads are also on threadIdx.y (a fused launch's
// steps are one row of threads).
func.func @second_thread_axis(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vt] : memref<8xf32>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %y[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: a loop inside its grid is bound to threadIdx.y}}
  tl.for %b = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %s = %c0 to %c2 step %c1 kind(thread_bound) thread("threadIdx.y") {
      tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "b" (%vs = spatial %s, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%z[%vs, %vt] : memref<2x8xf32>) {
          %v = affine.load %x[symbol(%vt)] : memref<8xf32>
          affine.store %v, %z[symbol(%vs), symbol(%vt)] : memref<2x8xf32>
        }
      }
    }
  }
  return
}

// -----

// A launch whose workgroups are independent by its block's declaration
// only (an index the analysis cannot follow): fused, nothing would show it.
func.func @declared_only(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vt] : memref<8xf32>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %y[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: the analysis cannot show its workgroups independent (they rest on its blocks' declaration)}}
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    %r = arith.remui %b, %c4 : index
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "b" (%vr = spatial %r, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%z[%vr, %vt] : memref<4x8xf32>) {
        %v = affine.load %x[symbol(%vt)] : memref<8xf32>
        affine.store %v, %z[symbol(%vr), symbol(%vt)] : memref<4x8xf32>
      }
    }
  }
  return
}

// -----

// A load outside any block (no region says which elements it reads): the
// launch cannot be compared with the others.
func.func @load_outside_blocks(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<8xf32>, %i: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vt] : memref<8xf32>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %y[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: memref.load touches memory outside a block (no region says where)}}
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    %o = memref.load %i[%c0] : memref<1xindex>
    tl.block "b" (%vt = spatial %t, %vo = spatial %o) reads(%x[%vt] : memref<8xf32>) writes(%z[%vt] : memref<8xf32>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %z[symbol(%vt)] : memref<8xf32>
    }
  }
  return
}

// -----

// Two views of one buffer whose indices are not its elements (a window
// whose rows overlap): constants that differ in the first index do not
// keep the writes apart.
func.func @overlapping_view(%x: memref<8xf32>, %buf: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %v2 = memref.reinterpret_cast %buf to offset: [0], sizes: [2, 8], strides: [4, 1] : memref<16xf32> to memref<2x8xf32, strided<[4, 1]>>
  // expected-note @+1 {{the other launch}}
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%v2[0, %vt] : memref<2x8xf32, strided<[4, 1]>>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %v2[0, symbol(%vt)] : memref<2x8xf32, strided<[4, 1]>>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch accesses a buffer that another of the launches writes}}
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "b" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%v2[1, %vt] : memref<2x8xf32, strided<[4, 1]>>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %v2[1, symbol(%vt)] : memref<2x8xf32, strided<[4, 1]>>
    }
  }
  return
}

// -----

// The second launch writes what the first reads, through another view of
// the same buffer: fused, it could write before the first reads.
func.func @writes_what_the_first_reads(%buf: memref<2x8xf32>, %x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %r = memref.subview %buf[0, 0] [1, 8] [1, 1] : memref<2x8xf32> to memref<8xf32, strided<[1]>>
  %w = memref.subview %buf[0, 0] [2, 4] [1, 1] : memref<2x8xf32> to memref<2x4xf32, strided<[8, 1]>>
  // expected-note @+1 {{the other launch}}
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads(%r[%vt] : memref<8xf32, strided<[1]>>) writes(%y[%vt] : memref<8xf32>) {
      %v = affine.load %r[symbol(%vt)] : memref<8xf32, strided<[1]>>
      affine.store %v, %y[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch accesses a buffer that another of the launches writes}}
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "b" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%w[%vt floordiv 4, %vt mod 4] : memref<2x4xf32, strided<[8, 1]>>) {
      %v = affine.load %x[symbol(%vt)] : memref<8xf32>
      affine.store %v, %w[symbol(%vt) floordiv 4, symbol(%vt) mod 4] : memref<2x4xf32, strided<[8, 1]>>
    }
  }
  return
}

// -----

// A grid whose extent the call decides (a prompt's tokens): the fused
// grid's offsets would not be constants.
func.func @dynamic_grid(%x: memref<?xf32>, %y: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: its grid's extent on blockIdx.x is not a constant}}
  tl.for %b = %c0 to %n step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.block "a" (%vb = spatial %b) reads() writes(%x[%vb] : memref<?xf32>) {
      %f = arith.constant 1.0 : f32
      affine.store %f, %x[symbol(%vb)] : memref<?xf32>
    }
  }
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "b" (%vt = spatial %t) reads() writes(%y[%vt] : memref<8xf32>) {
      %f = arith.constant 1.0 : f32
      affine.store %f, %y[symbol(%vt)] : memref<8xf32>
    }
  }
  return
}

// -----

// A nest not mapped onto a grid (a CPU's loop): not a launch.
func.func @not_a_launch(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads() writes(%x[%vt] : memref<8xf32>) {
      %f = arith.constant 1.0 : f32
      affine.store %f, %x[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: its top loop is bound to neither a blockIdx axis nor threadIdx.x}}
  tl.for %t = %c0 to %c8 step %c1 kind(parallel) {
    tl.block "b" (%vt = spatial %t) reads() writes(%y[%vt] : memref<8xf32>) {
      %f = arith.constant 1.0 : f32
      affine.store %f, %y[symbol(%vt)] : memref<8xf32>
    }
  }
  return
}

// -----

// A workgroup body with a loop that is no step (no thread axis inside):
// every thread would run it.
func.func @not_a_step(%x: memref<8xf32>, %y: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads() writes(%x[%vt] : memref<8xf32>) {
      %f = arith.constant 1.0 : f32
      affine.store %f, %x[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: a loop of its workgroup's body is not a step (bound to threadIdx.x, or serial around such steps)}}
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %i = %c0 to %c8 step %c1 {
      tl.block "b" (%vb = spatial %b, %vi = spatial %i) reads() writes(%y[%vb, %vi] : memref<4x8xf32>) {
        %f = arith.constant 1.0 : f32
        affine.store %f, %y[symbol(%vb), symbol(%vi)] : memref<4x8xf32>
      }
    }
  }
  return
}

// -----

// A workgroup body that stores outside its steps: not the form of a fused
// part.
func.func @store_in_body(%x: memref<8xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads() writes(%x[%vt] : memref<8xf32>) {
      affine.store %f, %x[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: its workgroup's body holds memref.store, not only steps, stack buffers and index arithmetic}}
  tl.for %b = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x") {
    memref.store %f, %y[%b] : memref<4xf32>
    tl.for %t = %c0 to %c1 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "b" (%vb = spatial %b) reads() writes(%y[%vb] : memref<4xf32>) {
        affine.store %f, %y[symbol(%vb)] : memref<4xf32>
      }
    }
  }
  return
}

// -----

// A launch that runs a matrix band (warps on threadIdx.y, the band's lanes
// threadIdx.x of its own).
func.func @band(%x: memref<8xf32>, %a: memref<16x16xf16>, %w: memref<16x16xf16>, %o: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads() writes(%x[%vt] : memref<8xf32>) {
      affine.store %f, %x[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: it runs a matrix band}}
  tl.for %b = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
    tl.for %y = %c0 to %c1 step %c1 kind(thread_bound) thread("threadIdx.y") {
    tl.for %r = %c0 to %c16 step %c1 kind(mma) {
      tl.for %c = %c0 to %c16 step %c1 kind(mma) {
        tl.for %k = %c0 to %c16 step %c1 kind(mma) {
          tl.block "b" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x16xf16>, %w[%vc, %vk] : memref<16x16xf16>, %o[%vr, %vc] : memref<16x16xf32>) writes(%o[%vr, %vc] : memref<16x16xf32>) {
            %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x16xf16>
            %1 = arith.extf %0 : f16 to f32
            %2 = affine.load %w[symbol(%vc), symbol(%vk)] : memref<16x16xf16>
            %3 = arith.extf %2 : f16 to f32
            %4 = affine.load %o[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
            %5 = arith.mulf %1, %3 : f32
            %6 = arith.addf %4, %5 : f32
            affine.store %6, %o[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          }
        }
      }
    }
    }
  }
  return
}

// -----

// A workgroup buffer whose size the call decides: its workgroup memory has
// no size to add up.
func.func @dynamic_buffer(%x: memref<8xf32>, %y: memref<8xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 1.0 : f32
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads() writes(%x[%vt] : memref<8xf32>) {
      affine.store %f, %x[symbol(%vt)] : memref<8xf32>
    }
  }
  // expected-error @+1 {{fuse_launches: this launch cannot be fused: a stack buffer of its workgroup has no static shape}}
  tl.for %b = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
    %s = memref.alloca(%n) : memref<?xf32>
    tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "b" (%vt = spatial %t) reads() writes(%y[%vt] : memref<8xf32>) {
        affine.store %f, %y[symbol(%vt)] : memref<8xf32>
      }
    }
  }
  return
}
