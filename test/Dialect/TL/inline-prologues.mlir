// RUN: llm-opt %s -pass-pipeline='builtin.module(func.func(tl-inline-prologues))' -split-input-file | FileCheck %s

// llama.cpp mode's norm before a quantized matmul: the scale block
// (x * inv[t] * g[k]) feeds the activations' absolute max per block of 4
// (a reduction) and their quantization, each reading an element once. The
// scale moves into both; the normalised rows are never stored.
// CHECK-LABEL: func.func @norm_into_quant
// CHECK-NOT: memref.alloc
// CHECK-NOT: tl.block "scale"
// CHECK: tl.block "absmax"
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: math.absf
// CHECK: tl.block "quant"
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.divf
func.func @norm_into_quant(%x: memref<2x8xf32>, %inv: memref<2xf32>, %g: memref<8xf32>, %max: memref<2x2xf32>, %q: memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %y = memref.alloc() : memref<2x8xf32>
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "scale" (%vt = spatial %t, %vk = spatial %k) reads(%x[%vt, %vk] : memref<2x8xf32>, %inv[%vt] : memref<2xf32>, %g[%vk] : memref<8xf32>) writes(%y[%vt, %vk] : memref<2x8xf32>) {
        %a = affine.load %x[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        %i = affine.load %inv[symbol(%vt)] : memref<2xf32>
        %w = affine.load %g[symbol(%vk)] : memref<8xf32>
        %m = arith.mulf %a, %i : f32
        %s = arith.mulf %m, %w : f32
        affine.store %s, %y[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
      }
    }
  }
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %b = %c0 to %c2 step %c1 {
      tl.for %j = %c0 to %c4 step %c1 {
        tl.block "absmax" (%vt = spatial %t, %vb = spatial %b, %vj = reduce %j) reads(%y[%vt, %vb * 4 + %vj] : memref<2x8xf32>, %max[%vt, %vb] : memref<2x2xf32>) writes(%max[%vt, %vb] : memref<2x2xf32>) init {
          %z = arith.constant 0.0 : f32
          affine.store %z, %max[symbol(%vt), symbol(%vb)] : memref<2x2xf32>
        } {
          %v = affine.load %y[symbol(%vt), symbol(%vb) * 4 + symbol(%vj)] : memref<2x8xf32>
          %a = math.absf %v : f32
          %o = affine.load %max[symbol(%vt), symbol(%vb)] : memref<2x2xf32>
          %n = arith.maximumf %o, %a : f32
          affine.store %n, %max[symbol(%vt), symbol(%vb)] : memref<2x2xf32>
        }
      }
    }
  }
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %b = %c0 to %c2 step %c1 {
      tl.for %j = %c0 to %c4 step %c1 {
        tl.block "quant" (%vt = spatial %t, %vb = spatial %b, %vj = spatial %j) reads(%y[%vt, %vb * 4 + %vj] : memref<2x8xf32>, %max[%vt, %vb] : memref<2x2xf32>) writes(%q[%vt, %vb * 4 + %vj] : memref<2x8xf32>) {
          %v = affine.load %y[symbol(%vt), symbol(%vb) * 4 + symbol(%vj)] : memref<2x8xf32>
          %m = affine.load %max[symbol(%vt), symbol(%vb)] : memref<2x2xf32>
          %d = arith.divf %v, %m : f32
          affine.store %d, %q[symbol(%vt), symbol(%vb) * 4 + symbol(%vj)] : memref<2x8xf32>
        }
      }
    }
  }
  return
}

// -----

// Left alone: the scale feeding a matmul (each element read once per
// output column: inlining would repeat it N times), an exponential
// (silu: not cheap), and an add read by three blocks.
// CHECK-LABEL: func.func @kept
// CHECK: tl.block "scale"
// CHECK: tl.block "matmul"
// CHECK: tl.block "silu"
// CHECK: tl.block "sum"
// CHECK: tl.block "add"
// CHECK: tl.block "r1"
// CHECK: tl.block "r2"
// CHECK: tl.block "r3"
func.func @kept(%x: memref<2x8xf32>, %g: memref<8xf32>, %w: memref<4x8xf32>, %o: memref<2x4xf32>, %o2: memref<2x8xf32>, %o3: memref<2x8xf32>, %o4: memref<2x8xf32>, %o5: memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %y = memref.alloc() : memref<2x8xf32>
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "scale" (%vt = spatial %t, %vk = spatial %k) reads(%x[%vt, %vk] : memref<2x8xf32>, %g[%vk] : memref<8xf32>) writes(%y[%vt, %vk] : memref<2x8xf32>) {
        %a = affine.load %x[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        %b = affine.load %g[symbol(%vk)] : memref<8xf32>
        %m = arith.mulf %a, %b : f32
        affine.store %m, %y[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
      }
    }
  }
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %n = %c0 to %c4 step %c1 {
      tl.for %k = %c0 to %c8 step %c1 {
        tl.block "matmul" (%vt = spatial %t, %vn = spatial %n, %vk = reduce %k) reads(%y[%vt, %vk] : memref<2x8xf32>, %w[%vn, %vk] : memref<4x8xf32>, %o[%vt, %vn] : memref<2x4xf32>) writes(%o[%vt, %vn] : memref<2x4xf32>) init {
          %z = arith.constant 0.0 : f32
          affine.store %z, %o[symbol(%vt), symbol(%vn)] : memref<2x4xf32>
        } {
          %a = affine.load %y[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
          %b = affine.load %w[symbol(%vn), symbol(%vk)] : memref<4x8xf32>
          %c = affine.load %o[symbol(%vt), symbol(%vn)] : memref<2x4xf32>
          %f = math.fma %a, %b, %c : f32
          affine.store %f, %o[symbol(%vt), symbol(%vn)] : memref<2x4xf32>
        }
      }
    }
  }
  %e = memref.alloc() : memref<2x8xf32>
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "silu" (%vt = spatial %t, %vk = spatial %k) reads(%x[%vt, %vk] : memref<2x8xf32>) writes(%e[%vt, %vk] : memref<2x8xf32>) {
        %a = affine.load %x[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        %b = math.exp %a : f32
        affine.store %b, %e[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
      }
    }
  }
  %s = memref.alloc() : memref<2x8xf32>
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "sum" (%vt = spatial %t, %vk = spatial %k) reads(%e[%vt, %vk] : memref<2x8xf32>) writes(%o2[%vt, %vk] : memref<2x8xf32>) {
        %a = affine.load %e[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        affine.store %a, %o2[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
      }
    }
  }
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "add" (%vt = spatial %t, %vk = spatial %k) reads(%x[%vt, %vk] : memref<2x8xf32>, %o2[%vt, %vk] : memref<2x8xf32>) writes(%s[%vt, %vk] : memref<2x8xf32>) {
        %a = affine.load %x[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        %b = affine.load %o2[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        %c = arith.addf %a, %b : f32
        affine.store %c, %s[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
      }
    }
  }
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "r1" (%vt = spatial %t, %vk = spatial %k) reads(%s[%vt, %vk] : memref<2x8xf32>) writes(%o3[%vt, %vk] : memref<2x8xf32>) {
        %a = affine.load %s[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        affine.store %a, %o3[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
      }
    }
  }
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "r2" (%vt = spatial %t, %vk = spatial %k) reads(%s[%vt, %vk] : memref<2x8xf32>) writes(%o4[%vt, %vk] : memref<2x8xf32>) {
        %a = affine.load %s[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        affine.store %a, %o4[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
      }
    }
  }
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "r3" (%vt = spatial %t, %vk = spatial %k) reads(%s[%vt, %vk] : memref<2x8xf32>) writes(%o5[%vt, %vk] : memref<2x8xf32>) {
        %a = affine.load %s[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        affine.store %a, %o5[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
      }
    }
  }
  return
}
