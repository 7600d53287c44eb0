// RUN: llm-opt %s -pass-pipeline='builtin.module(func.func(tl-inline-epilogues))' -split-input-file | FileCheck %s

// The residual add reads, element for element, the buffer the product's
// output block writes: it is computed where that block stores each element
// (the same addf of the same two values), its nest and the intermediate go,
// and the output buffer's allocation moves above the producer.
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:.+]]: memref<4x8xf32>, %[[R:.+]]: memref<4x8xf32>)
// CHECK: %[[OUT:.+]] = memref.alloc() : memref<4x8xf32>
// CHECK-NOT: memref.alloc
// CHECK: tl.block "out" (%[[I:.+]] = spatial %{{.+}}, %[[J:.+]] = spatial %{{.+}}, %[[K:.+]] = spatial %{{.+}}) reads(%[[X]][%[[I]], %[[J]] * 2 + %[[K]]] : memref<4x8xf32>, %[[R]][%[[I]], %[[J]] * 2 + %[[K]]] : memref<4x8xf32>) writes(%[[OUT]][%[[I]], %[[J]] * 2 + %[[K]]] : memref<4x8xf32>)
// CHECK: %[[V:.+]] = arith.mulf
// CHECK: %[[RV:.+]] = affine.load %[[R]][symbol(%[[I]]), symbol(%[[J]]) * 2 + symbol(%[[K]])]
// CHECK: %[[SUM:.+]] = arith.addf %[[RV]], %[[V]]
// CHECK: affine.store %[[SUM]], %[[OUT]][symbol(%[[I]]), symbol(%[[J]]) * 2 + symbol(%[[K]])]
// CHECK-NOT: tl.block
// CHECK: return %[[OUT]]
func.func @residual(%x: memref<4x8xf32>, %r: memref<4x8xf32>) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %b = memref.alloc() : memref<4x8xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    tl.for %j = %c0 to %c4 step %c1 {
      tl.for %k = %c0 to %c2 step %c1 {
        tl.block "out" (%vi = spatial %i, %vj = spatial %j, %vk = spatial %k) reads(%x[%vi, %vj * 2 + %vk] : memref<4x8xf32>) writes(%b[%vi, %vj * 2 + %vk] : memref<4x8xf32>) {
          %v = affine.load %x[symbol(%vi), symbol(%vj) * 2 + symbol(%vk)] : memref<4x8xf32>
          %w = arith.mulf %v, %v : f32
          affine.store %w, %b[symbol(%vi), symbol(%vj) * 2 + symbol(%vk)] : memref<4x8xf32>
        }
      }
    }
  }
  %out = memref.alloc() : memref<4x8xf32>
  tl.for %i = %c0 to %c4 step %c1 {
    tl.for %j = %c0 to %c8 step %c1 {
      tl.block "add" (%vi = spatial %i, %vj = spatial %j) reads(%r[%vi, %vj] : memref<4x8xf32>, %b[%vi, %vj] : memref<4x8xf32>) writes(%out[%vi, %vj] : memref<4x8xf32>) {
        %a = affine.load %r[symbol(%vi), symbol(%vj)] : memref<4x8xf32>
        %p = affine.load %b[symbol(%vi), symbol(%vj)] : memref<4x8xf32>
        %s = arith.addf %a, %p : f32
        affine.store %s, %out[symbol(%vi), symbol(%vj)] : memref<4x8xf32>
      }
    }
  }
  return %out : memref<4x8xf32>
}

// -----

// Left alone: a block between the producer and "add" writes what "add"
// reads ("clobber"), another block reads the intermediate too ("other"),
// the consumer covers only part of the buffer ("part"), and buffers that
// are not the function's own (arguments: what "clobber" writes) are never
// dropped.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-6: tl.block
// CHECK-NOT: tl.block
func.func @kept(%x: memref<8xf32>, %r: memref<8xf32>, %o1: memref<8xf32>, %o2: memref<8xf32>, %o3: memref<8xf32>, %o4: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %b = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "producer" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %b[symbol(%v)] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "clobber" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%r[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %r[symbol(%v)] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "add" (%v = spatial %i) reads(%r[%v] : memref<8xf32>, %b[%v] : memref<8xf32>) writes(%o1[%v] : memref<8xf32>) {
      %a = affine.load %r[symbol(%v)] : memref<8xf32>
      %p = affine.load %b[symbol(%v)] : memref<8xf32>
      %s = arith.addf %a, %p : f32
      affine.store %s, %o1[symbol(%v)] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "other" (%v = spatial %i) reads(%b[%v] : memref<8xf32>) writes(%o2[%v] : memref<8xf32>) {
      %p = affine.load %b[symbol(%v)] : memref<8xf32>
      affine.store %p, %o2[symbol(%v)] : memref<8xf32>
    }
  }
  %b2 = memref.alloc() : memref<8xf32>
  tl.for %i = %c0 to %c8 step %c1 {
    tl.block "producer2" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%b2[%v] : memref<8xf32>) {
      %a = affine.load %x[symbol(%v)] : memref<8xf32>
      affine.store %a, %b2[symbol(%v)] : memref<8xf32>
    }
  }
  tl.for %i = %c0 to %c4 step %c1 {
    tl.block "part" (%v = spatial %i) reads(%b2[%v] : memref<8xf32>) writes(%o4[%v] : memref<4xf32>) {
      %p = affine.load %b2[symbol(%v)] : memref<8xf32>
      affine.store %p, %o4[symbol(%v)] : memref<4xf32>
    }
  }
  return
}
