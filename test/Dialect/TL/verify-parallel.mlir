// RUN: llm-opt %s -tl-verify-parallel -split-input-file -verify-diagnostics | FileCheck %s

// Independent iterations pass: each writes its own tile (c * iv + r with r
// in [0, c)), reads what no iteration writes, and keeps partial sums in a
// buffer of its own.
// CHECK-LABEL: func.func @tiles
func.func @tiles(%x: memref<64xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  tl.for %i = %c0 to %c16 step %c1 kind(parallel) {
    %acc = memref.alloca() : memref<1xf32>
    tl.for %j = %c0 to %c4 step %c1 {
      tl.block "acc" (%vi = spatial %i, %vj = reduce %j)
          reads(%x[%vi * 4 + %vj] : memref<64xf32>, %acc[0] : memref<1xf32>)
          writes(%acc[0] : memref<1xf32>) init {
        %z = arith.constant 0.0 : f32
        affine.store %z, %acc[0] : memref<1xf32>
      } {
        %a = affine.load %x[%vi * 4 + %vj] : memref<64xf32>
        %s = affine.load %acc[0] : memref<1xf32>
        %r = arith.addf %a, %s : f32
        affine.store %r, %acc[0] : memref<1xf32>
      }
    }
    tl.for %j = %c0 to %c4 step %c1 {
      %k = arith.muli %i, %c4 : index
      %e = arith.addi %k, %j : index
      tl.block "out" (%ve = spatial %e) reads(%acc[0] : memref<1xf32>)
          writes(%y[%ve] : memref<64xf32>) {
        %s = affine.load %acc[0] : memref<1xf32>
        affine.store %s, %y[%ve] : memref<64xf32>
      }
    }
  }
  return
}

// -----

// A scratch buffer shared by every iteration would race.
func.func @shared_scratch(%x: memref<16xf32>, %y: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %t = memref.alloc() : memref<1xf32>
  // expected-error @+1 {{tl-verify-parallel: every iteration of the loop writes the same elements in tl.block 'stash'}}
  tl.for %i = %c0 to %c16 step %c1 kind(parallel) {
    // expected-note @+1 {{the block is here}}
    tl.block "stash" (%vi = spatial %i) reads(%x[%vi] : memref<16xf32>)
        writes(%t[0] : memref<1xf32>) {
      %a = affine.load %x[%vi] : memref<16xf32>
      affine.store %a, %t[0] : memref<1xf32>
    }
    tl.block "use" (%vi = spatial %i) reads(%t[0] : memref<1xf32>)
        writes(%y[%vi] : memref<16xf32>) {
      %a = affine.load %t[0] : memref<1xf32>
      affine.store %a, %y[%vi] : memref<16xf32>
    }
  }
  memref.dealloc %t : memref<1xf32>
  return
}

// -----

// Iteration i reads the element iteration i + 1 writes.
func.func @neighbour(%y: memref<17xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  // expected-error @+1 {{cannot show that iterations of the loop write disjoint elements of a buffer of tl.block 'shift'}}
  tl.for %i = %c0 to %c16 step %c1 kind(parallel) {
    // expected-note @+1 {{the block is here}}
    tl.block "shift" (%vi = spatial %i) reads(%y[%vi + 1] : memref<17xf32>)
        writes(%y[%vi] : memref<17xf32>) {
      %a = affine.load %y[%vi + 1] : memref<17xf32>
      affine.store %a, %y[%vi] : memref<17xf32>
    }
  }
  return
}

// -----

// A parallel loop may not carry a reduction.
func.func @reduction(%x: memref<16xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  // expected-error @+1 {{the loop carries reduction variable 0 of tl.block 'sum'}}
  tl.for %i = %c0 to %c16 step %c1 kind(parallel) {
    // expected-note @+1 {{the block is here}}
    tl.block "sum" (%vi = reduce %i) reads(%x[%vi] : memref<16xf32>, %y[0] : memref<1xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %x[%vi] : memref<16xf32>
      %s = affine.load %y[0] : memref<1xf32>
      %r = arith.addf %a, %s : f32
      affine.store %r, %y[0] : memref<1xf32>
    }
  }
  return
}

// -----

func.func @nested(%y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-note @+1 {{the enclosing parallel loop}}
  tl.for %i = %c0 to %c8 step %c1 kind(parallel) {
    // expected-error @+1 {{tl-verify-parallel: a parallel loop inside another parallel loop}}
    tl.for %j = %c0 to %c8 step %c1 kind(parallel) {
      tl.block "fill" (%vi = spatial %i, %vj = spatial %j) reads()
          writes(%y[%vi, %vj] : memref<8x8xf32>) {
        %z = arith.constant 1.0 : f32
        affine.store %z, %y[%vi, %vj] : memref<8x8xf32>
      }
    }
  }
  return
}

// -----

// The loop as the fastest digit (p.V's outputs of a GQA group, head g's
// output d at g * 64 + d, on the threads over d): the loop inside moves an
// element by multiples of 64 and two iterations differ by less than 64.
// CHECK-LABEL: func.func @fastest_digit
func.func @fastest_digit(%y: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  tl.for %d = %c0 to %c64 step %c1 kind(parallel) {
    tl.for %g = %c0 to %c4 step %c1 {
      tl.block "heads" (%vg = spatial %g, %vd = spatial %d) reads()
          writes(%y[%vg * 64 + %vd + 0] : memref<256xf32>) {
        %z = arith.constant 0.0 : f32
        affine.store %z, %y[%vg * 64 + %vd] : memref<256xf32>
      }
    }
  }
  return
}

// -----

// Its near miss: the digits overlap (g * 32 + d, d < 64), so iterations d
// and d + 32 write one element.
func.func @overlapping_digits(%y: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  // expected-error @+1 {{cannot show that iterations of the loop write disjoint elements of a buffer of tl.block 'heads'}}
  tl.for %d = %c0 to %c64 step %c1 kind(parallel) {
    tl.for %g = %c0 to %c4 step %c1 {
      // expected-note @+1 {{the block is here}}
      tl.block "heads" (%vg = spatial %g, %vd = spatial %d) reads()
          writes(%y[%vg * 32 + %vd] : memref<256xf32>) {
        %z = arith.constant 0.0 : f32
        affine.store %z, %y[%vg * 32 + %vd] : memref<256xf32>
      }
    }
  }
  return
}

// -----

// The fastest digit with the constants apart: iteration d reads the element
// iteration d + 1 writes (the loops inside move it by 64, the constant by
// one, and c * (i - i') = 1 has a solution).
func.func @digit_neighbour(%y: memref<260xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  // expected-error @+1 {{cannot show that iterations of the loop write disjoint elements of a buffer of tl.block 'shift'}}
  tl.for %d = %c0 to %c64 step %c1 kind(parallel) {
    tl.for %g = %c0 to %c4 step %c1 {
      // expected-note @+1 {{the block is here}}
      tl.block "shift" (%vg = spatial %g, %vd = spatial %d)
          reads(%y[%vg * 64 + %vd + 1] : memref<260xf32>)
          writes(%y[%vg * 64 + %vd] : memref<260xf32>) {
        %v = affine.load %y[%vg * 64 + %vd + 1] : memref<260xf32>
        affine.store %v, %y[%vg * 64 + %vd] : memref<260xf32>
      }
    }
  }
  return
}

// -----

// A KV cache's transposed store: element (d, t) at d * 2048 + pos0 + t. The
// analysis cannot show the token loop's iterations disjoint (pos0 + t could
// reach the next d's slice), but the block declares its variables spatial:
// distinct values, distinct elements. A GPU thread axis rests on that
// declaration.
// CHECK-LABEL: func.func @declared
func.func @declared(%x: memref<?x64xf32>, %kv: memref<131072xf32>, %pos0: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  tl.for %t = %c0 to %n step %c1 kind(thread_bound) thread("blockIdx.x") {
    %p = arith.addi %t, %pos0 : index
    tl.for %d = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "kv_store_v" (%vt = spatial %t, %vp = spatial %p, %vd = spatial %d) reads(%x[%vt, %vd] : memref<?x64xf32>) writes(%kv[%vd * 2048 + %vp] : memref<131072xf32>) {
        %v = affine.load %x[%vt, %vd] : memref<?x64xf32>
        affine.store %v, %kv[%vd * 2048 + %vp] : memref<131072xf32>
      }
    }
  }
  return
}

// -----

// The declaration covers a thread axis only: a parallel loop on the CPU
// still needs the analysis.
func.func @declared_parallel(%x: memref<?x64xf32>, %kv: memref<131072xf32>, %pos0: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  // expected-error @+1 {{tl-verify-parallel: cannot show that iterations of the loop write disjoint elements}}
  tl.for %t = %c0 to %n step %c1 kind(parallel) {
    %p = arith.addi %t, %pos0 : index
    tl.for %d = %c0 to %c64 step %c1 {
      // expected-note @+1 {{the block is here}}
      tl.block "kv_store_v" (%vt = spatial %t, %vp = spatial %p, %vd = spatial %d) reads(%x[%vt, %vd] : memref<?x64xf32>) writes(%kv[%vd * 2048 + %vp] : memref<131072xf32>) {
        %v = affine.load %x[%vt, %vd] : memref<?x64xf32>
        affine.store %v, %kv[%vd * 2048 + %vp] : memref<131072xf32>
      }
    }
  }
  return
}

// -----

// A block that reads what it writes at another element (a shift) is not
// independent by its declaration.
func.func @shift(%x: memref<129xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  // expected-error @+1 {{tl-verify-parallel: cannot show}}
  tl.for %i = %c0 to %c128 step %c1 kind(thread_bound) thread("threadIdx.x") {
    // expected-note @+1 {{the block is here}}
    tl.block "shift" (%vi = spatial %i) reads(%x[%vi + 1] : memref<129xf32>) writes(%x[%vi] : memref<129xf32>) {
      %v = affine.load %x[%vi + 1] : memref<129xf32>
      affine.store %v, %x[%vi] : memref<129xf32>
    }
  }
  return
}

// -----

// A matrix band's three loops are all of kind mma.
func.func @band_kinds(%a: memref<16x16xf16>, %b: memref<16x16xf16>, %y: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  // expected-error @+1 {{tl-verify-parallel: a matrix band's three loops must all be of kind mma}}
  tl.for %r = %c0 to %c16 step %c1 kind(mma) {
    tl.for %c = %c0 to %c16 step %c1 {
      tl.for %k = %c0 to %c16 step %c1 kind(mma) {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x16xf16>, %b[%vc, %vk] : memref<16x16xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) {
          %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x16xf16>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x16xf16>
          %2 = arith.extf %0 : f16 to f32
          %3 = arith.extf %1 : f16 to f32
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          %5 = math.fma %2, %3, %4 : f32
          affine.store %5, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
        }
      }
    }
  }
  return
}

// -----

// A band of kind mma whose form is not a matrix band's (24 rows: not a
// multiple of 16): the reason is named.
func.func @band_form(%a: memref<24x16xf16>, %b: memref<16x16xf16>, %y: memref<24x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c24 = arith.constant 24 : index
  // expected-error @+1 {{tl-verify-parallel: each loop of a matrix band must run from 0 with step 1 to a constant multiple of 16}}
  tl.for %r = %c0 to %c24 step %c1 kind(mma) {
    tl.for %c = %c0 to %c16 step %c1 kind(mma) {
      tl.for %k = %c0 to %c16 step %c1 kind(mma) {
        tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<24x16xf16>, %b[%vc, %vk] : memref<16x16xf16>, %y[%vr, %vc] : memref<24x16xf32>) writes(%y[%vr, %vc] : memref<24x16xf32>) {
          %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<24x16xf16>
          %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x16xf16>
          %2 = arith.extf %0 : f16 to f32
          %3 = arith.extf %1 : f16 to f32
          %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<24x16xf32>
          %5 = math.fma %2, %3, %4 : f32
          affine.store %5, %y[symbol(%vr), symbol(%vc)] : memref<24x16xf32>
        }
      }
    }
  }
  return
}

// -----

// A fused launch (the form fuse_launches makes) whose second part reads
// what the first writes: its workgroups may run before the first's.
func.func @fused_parts_conflict(%x: memref<8xf32>, %y: memref<32xf32>, %z: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %w = %c0 to %c8 step %c1 kind(thread_bound) thread("blockIdx.x") {
    %n = arith.addi %w, %c1 : index
    %e = arith.minui %n, %c4 : index
    // expected-note @+1 {{the other part}}
    tl.for %g = %w to %e step %c1 {
      tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "a" (%vb = spatial %w, %vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vb * 8 + %vt] : memref<32xf32>) {
          %v = affine.load %x[symbol(%vt)] : memref<8xf32>
          affine.store %v, %y[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
        }
      }
    }
    %l = arith.maxui %w, %c4 : index
    %b = arith.subi %w, %c4 : index
    // expected-error @+1 {{tl-verify-parallel: a part of a fused launch accesses a buffer that another part writes}}
    tl.for %g = %l to %n step %c1 {
      tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "b" (%vb = spatial %b, %vt = spatial %t) reads(%y[%vb * 8 + %vt] : memref<32xf32>) writes(%z[%vb * 8 + %vt] : memref<32xf32>) {
          %v = affine.load %y[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
          affine.store %v, %z[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
        }
      }
    }
  }
  return
}

// -----

// A fused launch whose part writes the same elements in each of its
// workgroups (its grid index unused).
func.func @fused_part_racy(%x: memref<8xf32>, %y: memref<8xf32>, %z: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  // expected-error @+1 {{tl-verify-parallel: every iteration of the loop writes the same elements in tl.block 'a'}}
  tl.for %w = %c0 to %c8 step %c1 kind(thread_bound) thread("blockIdx.x") {
    %n = arith.addi %w, %c1 : index
    %e = arith.minui %n, %c4 : index
    tl.for %g = %w to %e step %c1 {
      tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
        // expected-note @+1 {{the block is here}}
        tl.block "a" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%y[%vt] : memref<8xf32>) {
          %v = affine.load %x[symbol(%vt)] : memref<8xf32>
          affine.store %v, %y[symbol(%vt)] : memref<8xf32>
        }
      }
    }
    %l = arith.maxui %w, %c4 : index
    tl.for %g = %l to %n step %c1 {
      tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "b" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%z[%vt] : memref<8xf32>) {
          %v = affine.load %x[symbol(%vt)] : memref<8xf32>
          affine.store %v, %z[symbol(%vt)] : memref<8xf32>
        }
      }
    }
  }
  return
}
