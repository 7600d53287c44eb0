// RUN: llm-opt %s -split-input-file -tl-schedule='script={compute_inline(scale)}' | FileCheck %s

// A norm's scale block (x * inv[t] * g[k]) inlined into the two blocks that
// read it a block of 4 at a time: a reduction (the block's absolute max)
// and an elementwise block. Each load of %y becomes the scale's
// computation at the consumer's indices (k = b * 4 + j), the read regions
// name x, inv and g there, and the scale's nest and %y go.
// CHECK-LABEL: func.func @norm_prologue
// CHECK-SAME: (%[[X:.+]]: memref<2x8xf32>, %[[INV:.+]]: memref<2xf32>, %[[G:.+]]: memref<8xf32>, %[[MAX:.+]]: memref<2x2xf32>, %[[Q:.+]]: memref<2x8xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: tl.block "scale"
// CHECK-NOT: affine.apply
// CHECK: tl.block "absmax" (%[[T:.+]] = spatial %{{.+}}, %[[B:.+]] = spatial %{{.+}}, %[[J:.+]] = reduce %{{.+}}) reads(%[[MAX]][%[[T]], %[[B]]] : memref<2x2xf32>, %[[X]][%[[T]], %[[B]] * 4 + %[[J]]] : memref<2x8xf32>, %[[INV]][%[[T]]] : memref<2xf32>, %[[G]][%[[B]] * 4 + %[[J]]] : memref<8xf32>) writes(%[[MAX]][%[[T]], %[[B]]] : memref<2x2xf32>)
// CHECK: %[[XV:.+]] = affine.load %[[X]][symbol(%[[T]]), symbol(%[[B]]) * 4 + symbol(%[[J]])]
// CHECK: %[[IV:.+]] = affine.load %[[INV]][symbol(%[[T]])]
// CHECK: %[[GV:.+]] = affine.load %[[G]][symbol(%[[B]]) * 4 + symbol(%[[J]])]
// CHECK: %[[M:.+]] = arith.mulf %[[XV]], %[[IV]]
// CHECK: %[[Y:.+]] = arith.mulf %[[M]], %[[GV]]
// CHECK: math.absf %[[Y]]
// CHECK: tl.block "quant" (%[[T2:.+]] = spatial %{{.+}}, %[[B2:.+]] = spatial %{{.+}}, %[[J2:.+]] = spatial %{{.+}}) reads(%[[MAX]][%[[T2]], %[[B2]]] : memref<2x2xf32>, %[[X]][%[[T2]], %[[B2]] * 4 + %[[J2]]] : memref<2x8xf32>, %[[INV]][%[[T2]]] : memref<2xf32>, %[[G]][%[[B2]] * 4 + %[[J2]]] : memref<8xf32>) writes(%[[Q]][%[[T2]], %[[B2]] * 4 + %[[J2]]] : memref<2x8xf32>)
// CHECK: arith.divf
func.func @norm_prologue(%x: memref<2x8xf32>, %inv: memref<2xf32>, %g: memref<8xf32>, %max: memref<2x2xf32>, %q: memref<2x8xf32>) {
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

// RoPE-like: the consumer reads two elements of each row (k and k + 4) and
// the producer transposes ([k][t] from [t][k]): each load is the producer's
// element at its own indices; a producer variable used outside its loads
// (an index cast) becomes the consumer's index expression.
// CHECK-LABEL: func.func @pairs
// CHECK-NOT: tl.block "scale"
// CHECK: tl.block "rot" (%[[T:.+]] = spatial %{{.+}}, %[[I:.+]] = spatial %{{.+}}) reads(%[[X:.+]][%[[T]], %[[I]]] : memref<2x8xf32>, %[[X]][%[[T]], %[[I]] + 4] : memref<2x8xf32>)
// CHECK: affine.load %[[X]][symbol(%[[T]]), symbol(%[[I]])]
// CHECK: arith.index_cast %[[I]]
// CHECK: %[[K:.+]] = affine.apply #{{.+}}(%[[T]], %[[I]])
// CHECK: affine.load %[[X]][symbol(%[[T]]), symbol(%[[I]]) + 4]
// CHECK: arith.index_cast %[[K]]
func.func @pairs(%x: memref<2x8xf32>, %out: memref<2x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %y = memref.alloc() : memref<8x2xf32>
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %k = %c0 to %c8 step %c1 {
      tl.block "scale" (%vt = spatial %t, %vk = spatial %k) reads(%x[%vt, %vk] : memref<2x8xf32>) writes(%y[%vk, %vt] : memref<8x2xf32>) {
        %a = affine.load %x[symbol(%vt), symbol(%vk)] : memref<2x8xf32>
        %ki = arith.index_cast %vk : index to i32
        %kf = arith.sitofp %ki : i32 to f32
        %s = arith.mulf %a, %kf : f32
        affine.store %s, %y[symbol(%vk), symbol(%vt)] : memref<8x2xf32>
      }
    }
  }
  tl.for %t = %c0 to %c2 step %c1 {
    tl.for %i = %c0 to %c4 step %c1 {
      tl.block "rot" (%vt = spatial %t, %vi = spatial %i) reads(%y[%vi, %vt] : memref<8x2xf32>, %y[%vi + 4, %vt] : memref<8x2xf32>) writes(%out[%vt, %vi] : memref<2x4xf32>) {
        %a = affine.load %y[symbol(%vi), symbol(%vt)] : memref<8x2xf32>
        %b = affine.load %y[symbol(%vi) + 4, symbol(%vt)] : memref<8x2xf32>
        %s = arith.subf %a, %b : f32
        affine.store %s, %out[symbol(%vt), symbol(%vi)] : memref<2x4xf32>
      }
    }
  }
  return
}

// -----

// A producer that stores its own variable (an index buffer, as positions):
// each load becomes the index at the consumer's instance.
// CHECK-LABEL: func.func @iota
// CHECK-NOT: tl.block "scale"
// CHECK: tl.block "use" (%[[I:.+]] = spatial %{{.+}}) reads()
// CHECK: %[[K:.+]] = affine.apply #{{.+}}(%[[I]])
// CHECK: arith.index_cast %[[K]]
func.func @iota(%out: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %y = memref.alloc() : memref<8xindex>
  tl.for %k = %c0 to %c8 step %c1 {
    tl.block "scale" (%vk = spatial %k) reads() writes(%y[%vk] : memref<8xindex>) {
      affine.store %vk, %y[symbol(%vk)] : memref<8xindex>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "use" (%vi = spatial %i) reads(%y[%vi * 2] : memref<8xindex>) writes(%out[%vi] : memref<4xi32>) {
      %a = affine.load %y[symbol(%vi) * 2] : memref<8xindex>
      %b = arith.index_cast %a : index to i32
      affine.store %b, %out[symbol(%vi)] : memref<4xi32>
    }
  }
  return
}
