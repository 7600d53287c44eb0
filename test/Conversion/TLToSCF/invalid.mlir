// RUN: llm-opt %s -convert-tl-to-scf -split-input-file -verify-diagnostics

// A GPU thread axis has no meaning on a CPU: an error, not a serial loop.
func.func @thread_bound(%y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  // expected-error @+1 {{is bound to GPU thread axis "threadIdx.x", which the loops of a CPU cannot honour}}
  tl.for %i = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "fill" (%vi = spatial %i) reads() writes(%y[%vi] : memref<64xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%vi] : memref<64xf32>
    }
  }
  return
}

// -----

// One level of threads: a parallel loop inside another is refused.
func.func @nested_parallel(%y: memref<8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  // expected-note @+1 {{the enclosing parallel loop}}
  tl.for %i = %c0 to %c8 step %c1 kind(parallel) {
    // expected-error @+1 {{is a parallel loop inside another parallel loop}}
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

// What a vector lane cannot compute is an error, never a serial loop.
func.func @not_elementwise(%y: memref<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tl.for %l = %c0 to %c4 step %c1 kind(vectorized) {
    tl.block "loopy" (%vl = spatial %l) reads() writes(%y[%vl] : memref<4xf32>) {
      %z = arith.constant 1.0 : f32
      // expected-error @+1 {{cannot vectorize this operation (only elementwise arithmetic is widened)}}
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> f32 {
        %b = arith.addf %a, %z : f32
        scf.yield %b : f32
      }
      affine.store %r, %y[%vl] : memref<4xf32>
    }
  }
  return
}

// -----

func.func @dynamic_vector(%y: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{a vectorized loop needs bounds 0 to a constant with step 1}}
  tl.for %l = %c0 to %n step %c1 kind(vectorized) {
    tl.block "fill" (%vl = spatial %l) reads() writes(%y[%vl] : memref<?xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%vl] : memref<?xf32>
    }
  }
  return
}

// -----

// A matrix band runs on a GPU's matrix units: the CPU refuses it.
func.func @matrix_band(%a: memref<16x16xf16>, %b: memref<16x16xf16>, %y: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  tl.for %r = %c0 to %c16 step %c1 kind(mma) {
    tl.for %c = %c0 to %c16 step %c1 kind(mma) {
      // expected-error @+1 {{is a loop of a matrix band (kind mma), which runs on a GPU's matrix units; the loops of a CPU cannot honour it}}
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
