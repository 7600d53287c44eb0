// RUN: llm-opt %s -pass-pipeline='builtin.module(func.func(tl-vectorize{width=4}))' -split-input-file | FileCheck %s

// The innermost spatial loop (extent 16) is split by 4 and the inner loop
// vectorized; the block's variable becomes outer * 4 + inner.
// CHECK-LABEL: func.func @elementwise
// CHECK: tl.for %[[I:.+]] = %{{.*}} to %{{.*}} step %{{.*}} kind(parallel)
// CHECK: tl.for %[[JO:[a-z0-9]+]] = %{{[a-z0-9_]+}} to %{{[a-z0-9_]+}} step %{{[a-z0-9_]+}} {
// CHECK: %[[BASE:.+]] = arith.muli %[[JO]], %{{.*}}
// CHECK: tl.for %[[JI:[a-z0-9]+]] = %{{.*}} to %{{.*}} step %{{.*}} kind(vectorized)
// CHECK: %[[J:.+]] = arith.addi %[[BASE]], %[[JI]]
// CHECK: tl.block "add" (%{{.*}} = spatial %[[I]], %{{.*}} = spatial %[[J]])
func.func @elementwise(%x: memref<?x16xf32>, %y: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %n = memref.dim %x, %c0 : memref<?x16xf32>
  tl.for %i = %c0 to %n step %c1 kind(parallel) {
    tl.for %j = %c0 to %c16 step %c1 {
      tl.block "add" (%vi = spatial %i, %vj = spatial %j) reads(%x[%vi, %vj] : memref<?x16xf32>) writes(%y[%vi, %vj] : memref<?x16xf32>) {
        %a = affine.load %x[%vi, %vj] : memref<?x16xf32>
        %s = arith.addf %a, %a : f32
        affine.store %s, %y[%vi, %vj] : memref<?x16xf32>
      }
    }
  }
  return
}

// -----

// A reduction loop is not vectorized, nor is an extent that 4 does not
// divide.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: kind(vectorized)
func.func @kept(%x: memref<8x16xf32>, %y: memref<8xf32>, %z: memref<6xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  tl.for %i = %c0 to %c8 step %c1 {
    tl.for %k = %c0 to %c16 step %c1 {
      tl.block "sum" (%vi = spatial %i, %vk = reduce %k) reads(%x[%vi, %vk] : memref<8x16xf32>, %y[%vi] : memref<8xf32>) writes(%y[%vi] : memref<8xf32>) {
        %a = affine.load %x[%vi, %vk] : memref<8x16xf32>
        %s = affine.load %y[%vi] : memref<8xf32>
        %r = arith.addf %a, %s : f32
        affine.store %r, %y[%vi] : memref<8xf32>
      }
    }
  }
  tl.for %i = %c0 to %c6 step %c1 {
    tl.block "odd" (%vi = spatial %i) reads() writes(%z[%vi] : memref<6xf32>) {
      %one = arith.constant 1.0 : f32
      affine.store %one, %z[%vi] : memref<6xf32>
    }
  }
  return
}
