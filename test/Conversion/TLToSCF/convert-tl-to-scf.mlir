// RUN: llm-opt %s -convert-tl-to-scf -split-input-file | FileCheck %s

// Blocks are inlined: iteration variables become their bound values, affine
// accesses become index arithmetic and memref accesses, and the init runs
// under an scf.if when the reduction variable is zero. The parallel loop
// becomes an scf.parallel (threads), the other an scf.for.
// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:.+]]: memref<?x8xf32>, %[[Y:.+]]: memref<?xf32>)
// CHECK-NOT: tl.
// CHECK: scf.parallel (%[[I:.+]]) =
// CHECK: scf.for %[[K:.+]] =
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[K]], %{{.*}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK:   memref.store %{{.*}}, %[[Y]][%[[I]]]
// CHECK: }
// CHECK: %[[IDX:.+]] = arith.addi %[[K]], %{{.*}} : index
// CHECK: memref.load %[[X]][%[[I]], %[[IDX]]]
// CHECK: memref.load %[[Y]][%[[I]]]
// CHECK: memref.store %{{.*}}, %[[Y]][%[[I]]]
func.func @reduce(%x: memref<?x8xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  tl.for %i = %c0 to %n step %c1 kind(parallel) {
    tl.for %k = %c0 to %c7 step %c1 {
      tl.block "shifted_sum" (%vi = spatial %i, %vk = reduce %k)
          reads(%x[%vi, %vk + 1] : memref<?x8xf32>, %y[%vi] : memref<?xf32>)
          writes(%y[%vi] : memref<?xf32>) init {
        %z = arith.constant 0.0 : f32
        affine.store %z, %y[%vi] : memref<?xf32>
      } {
        %a = affine.load %x[%vi, %vk + 1] : memref<?x8xf32>
        %s = affine.load %y[%vi] : memref<?xf32>
        %r = arith.addf %a, %s : f32
        affine.store %r, %y[%vi] : memref<?xf32>
      }
    }
  }
  return
}

// -----

// An unrolled loop becomes one copy of its body per iteration.
// CHECK-LABEL: func.func @unrolled
// CHECK-NOT: scf.for
// CHECK: memref.store %{{.*}}, %[[Y:.+]][%[[C0:.+]]]
// CHECK: memref.store %{{.*}}, %[[Y]][%[[C1:.+]]]
// CHECK: memref.store %{{.*}}, %[[Y]][%[[C2:.+]]]
// CHECK-NOT: memref.store
func.func @unrolled(%y: memref<3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  tl.for %i = %c0 to %c3 step %c1 kind(unrolled) {
    tl.block "fill" (%vi = spatial %i) reads() writes(%y[%vi] : memref<3xf32>) {
      %z = arith.constant 1.0 : f32
      affine.store %z, %y[%vi] : memref<3xf32>
    }
  }
  return
}

// -----

// A prefetch: one memref.prefetch per line of its bytes (2304 from 8192
// bytes ahead: 36 lines), into the buffer collapsed to one dimension (i32:
// 4 bytes an element), each index clamped to the last element; into L2
// (level 2: locality 2, x86's prefetcht1).
// CHECK-LABEL: func.func @prefetch
// CHECK: %[[FLAT:.+]] = memref.collapse_shape %{{.+}} {{\[\[}}0, 1]] : memref<48x1728xi32> into memref<82944xi32>
// CHECK: %[[AT:.+]] = arith.addi %{{.+}}, %c2048 : index
// CHECK: %[[IDX:.+]] = arith.minui %[[AT]], %c82943 : index
// CHECK: memref.prefetch %[[FLAT]][%[[IDX]]], read, locality<2>, data : memref<82944xi32>
// CHECK: arith.addi %{{.+}}, %c2064 : index
// CHECK-COUNT-35: memref.prefetch
// CHECK-NOT: memref.prefetch
func.func @prefetch(%w: memref<48x1728xi32>, %i: index) {
  tl.prefetch %w[%i] {bytes = 2304 : i64, distance = 8192 : i64, level = 2 : i64, line = 64 : i64} : memref<48x1728xi32>
  return
}

// -----

// Level 1 (L1): locality 3, x86's prefetcht0.
// CHECK-LABEL: func.func @prefetch_l1
// CHECK: memref.prefetch %{{.+}}[%{{.+}}], read, locality<3>, data : memref<64xi8>
// CHECK-NOT: memref.prefetch
func.func @prefetch_l1(%w: memref<64xi8>, %i: index) {
  tl.prefetch %w[%i] {bytes = 64 : i64, distance = 0 : i64, level = 1 : i64, line = 64 : i64} : memref<64xi8>
  return
}
