// RUN: llm-opt %s -tl-plan-arena -split-input-file -verify-diagnostics | FileCheck %s

// Buffers become views of the arena argument; one whose live range begins
// after another's ended takes its bytes (%c reuses %a's offset), buffers
// live at once do not share any. Each size coefficient is rounded up to 64.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[N:.+]]: index, %[[OUT:.+]]: memref<?xf32>, %[[ARENA:.+]]: memref<?xi8> {llmc.arena})
// CHECK-SAME: llmc.arena = {{\[}}[{bytes = 128 : i64, of = ["arg0"]}]]
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[B_AT:.+]] = arith.muli %[[N]], %[[C64]]
// CHECK-NOT: memref.alloc
// CHECK-DAG: %[[A:.+]] = memref.view %[[ARENA]][%[[ZERO]]][%[[N]]] : memref<?xi8> to memref<?xf32>
// CHECK-DAG: %[[B:.+]] = memref.view %[[ARENA]][%[[B_AT]]][%[[N]]] : memref<?xi8> to memref<?xf32>
// CHECK-DAG: %[[C:.+]] = memref.view %[[ARENA]][%[[ZERO]]][%[[N]]] : memref<?xi8> to memref<?xf32>
// CHECK: tl.block "a"{{.*}}writes(%[[A]]
// CHECK: tl.block "b"{{.*}}reads(%[[A]]{{.*}}writes(%[[B]]
// CHECK: tl.block "c"{{.*}}reads(%[[B]]{{.*}}writes(%[[C]]
func.func @chain(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%n) : memref<?xf32>
  %c = memref.alloc(%n) : memref<?xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.block "a" (%v = spatial %i) reads(%out[%v] : memref<?xf32>) writes(%a[%v] : memref<?xf32>) {
      %x = affine.load %out[%v] : memref<?xf32>
      affine.store %x, %a[%v] : memref<?xf32>
    }
  }
  tl.for %i = %c0 to %n step %c1 {
    tl.block "b" (%v = spatial %i) reads(%a[%v] : memref<?xf32>) writes(%b[%v] : memref<?xf32>) {
      %x = affine.load %a[%v] : memref<?xf32>
      affine.store %x, %b[%v] : memref<?xf32>
    }
  }
  tl.for %i = %c0 to %n step %c1 {
    tl.block "c" (%v = spatial %i) reads(%b[%v] : memref<?xf32>) writes(%c[%v] : memref<?xf32>) {
      %x = affine.load %b[%v] : memref<?xf32>
      affine.store %x, %c[%v] : memref<?xf32>
    }
  }
  tl.for %i = %c0 to %n step %c1 {
    tl.block "out" (%v = spatial %i) reads(%c[%v] : memref<?xf32>) writes(%out[%v] : memref<?xf32>) {
      %x = affine.load %c[%v] : memref<?xf32>
      affine.store %x, %out[%v] : memref<?xf32>
    }
  }
  return
}

// -----

// Sizes are polynomials in the arguments: a dim of a memref argument, an
// index argument, their sums and products. Two buffers live at once are
// ordered in every coefficient: %s (64 n^2 + 64 n p bytes) first, %r (3076 n
// rounded to 3136 n) above it at 64 n^2 + 64 n p, for every n and p.
// CHECK-LABEL: func.func @polynomial
// CHECK-SAME: llmc.arena = {{\[}}[{bytes = 3136 : i64, of = ["arg0.0"]}, {bytes = 64 : i64, of = ["arg0.0", "arg0.0"]}, {bytes = 64 : i64, of = ["arg0.0", "arg1"]}]]
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK-DAG: %[[N:.+]] = memref.dim %arg0, %{{.+}} : memref<?xi32>
// CHECK-DAG: %[[NN:.+]] = arith.muli %[[N]], %[[N]]
// CHECK-DAG: %[[NP:.+]] = arith.muli %[[N]], %arg1
// CHECK-DAG: %[[T1:.+]] = arith.muli %[[NN]], %[[C64:.+]] : index
// CHECK-DAG: %[[T2:.+]] = arith.muli %[[NP]], %[[C64]]
// CHECK-DAG: %[[R_AT:.+]] = arith.addi %[[T1]], %[[T2]]
// CHECK: memref.view %arg2[%[[ZERO]]][%{{.+}}, %{{.+}}] : memref<?xi8> to memref<?x16x?xf32>
// CHECK: memref.view %arg2[%[[R_AT]]][%{{.+}}] : memref<?xi8> to memref<?x769xf32>
func.func @polynomial(%tokens: memref<?xi32>, %pos0: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %tokens, %c0 : memref<?xi32>
  %ctx = arith.addi %pos0, %n : index
  %s = memref.alloc(%n, %ctx) : memref<?x16x?xf32>
  %r = memref.alloc(%n) : memref<?x769xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.block "both" (%v = spatial %i) reads() writes(%s[%v, 0, 0] : memref<?x16x?xf32>, %r[%v, 0] : memref<?x769xf32>) {
      %x = arith.constant 1.0 : f32
      affine.store %x, %s[%v, 0, 0] : memref<?x16x?xf32>
      affine.store %x, %r[%v, 0] : memref<?x769xf32>
    }
  }
  return
}

// -----

// Sizes that are not polynomials get a polynomial bound: a size rounded up
// to a multiple of 64 (p + 63, 4 p + 252 bytes: 64 p + 256 once rounded), a
// minimum with a constant (the constant: 2048 floats), a difference of
// sizes (the first: n; 4 n bytes, 64 n rounded), a quotient (each
// coefficient divided, rounded up: n / 3 <= n; 8 n bytes, 64 n rounded).
// All four are live at once: 8448 + 128 n + 64 p bytes.
// CHECK-LABEL: func.func @bounds
// CHECK-SAME: llmc.arena = {{\[}}[{bytes = 8448 : i64, of = []}, {bytes = 128 : i64, of = ["arg0"]}, {bytes = 64 : i64, of = ["arg1"]}]]
// CHECK-NOT: memref.alloc
func.func @bounds(%n: index, %pos0: index, %rows: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %c2048 = arith.constant 2048 : index
  %p = arith.addi %pos0, %c63 : index
  %q = arith.divui %p, %c64 : index
  %up = arith.muli %q, %c64 : index
  %capped = arith.minui %up, %c2048 : index
  %d = arith.subi %n, %rows : index
  %third = arith.divui %n, %c3 : index
  %a = memref.alloc(%up) : memref<?xf32>
  %b = memref.alloc(%capped) : memref<?xf32>
  %c = memref.alloc(%d) : memref<?xf32>
  %e = memref.alloc(%third) : memref<?xf64>
  tl.for %i = %c0 to %c1 step %c1 {
    tl.block "all" (%v = spatial %i) reads() writes(%a[%v] : memref<?xf32>, %b[%v] : memref<?xf32>, %c[%v] : memref<?xf32>, %e[%v] : memref<?xf64>) {
      %x = arith.constant 1.0 : f32
      %y = arith.constant 1.0 : f64
      affine.store %x, %a[%v] : memref<?xf32>
      affine.store %x, %b[%v] : memref<?xf32>
      affine.store %x, %c[%v] : memref<?xf32>
      affine.store %y, %e[%v] : memref<?xf64>
    }
  }
  return
}

// -----

// A size read off a view goes through the ops that give it (here
// expand_shape's output shape, then the alloc's operand).
// CHECK-LABEL: func.func @through_views
// CHECK-SAME: llmc.arena = {{\[}}[{bytes = 4096 : i64, of = ["arg0.0"]}]]
// CHECK-NOT: memref.alloc
func.func @through_views(%tokens: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %tokens, %c0 : memref<?xi32>
  %a = memref.alloc(%n) : memref<?x512xf32>
  %e = memref.expand_shape %a [[0], [1, 2]] output_shape [%n, 8, 64] : memref<?x512xf32> into memref<?x8x64xf32>
  %m = memref.dim %e, %c0 : memref<?x8x64xf32>
  %b = memref.alloc(%m) : memref<?x8x64xf32>
  tl.for %i = %c0 to %m step %c1 {
    tl.block "both" (%v = spatial %i) reads() writes(%e[%v, 0, 0] : memref<?x8x64xf32>, %b[%v, 0, 0] : memref<?x8x64xf32>) {
      %x = arith.constant 1.0 : f32
      affine.store %x, %e[%v, 0, 0] : memref<?x8x64xf32>
      affine.store %x, %b[%v, 0, 0] : memref<?x8x64xf32>
    }
  }
  return
}

// -----

// Buffers that escape, or whose size has no polynomial bound (one read from
// memory; a difference whose subtrahend is itself only bounded), stay
// allocations; a public function gets an arena argument all the same (the
// entry's ABI), with an empty plan.
// CHECK-LABEL: func.func @kept
// CHECK-SAME: %{{.+}}: memref<?xi8> {llmc.arena}
// CHECK-SAME: llmc.arena = {{\[}}[]]
// CHECK-COUNT-3: memref.alloc
// CHECK-NOT: memref.view
func.func @kept(%n: index, %sizes: memref<1xindex>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %d = memref.load %sizes[%c0] : memref<1xindex>
  %third = arith.divui %n, %c3 : index
  %rest = arith.subi %n, %third : index
  %a = memref.alloc(%n) : memref<?xf32>
  %b = memref.alloc(%d) : memref<?xf32>
  %c = memref.alloc(%rest) : memref<?xf32>
  tl.for %i = %c0 to %c1 step %c1 {
    tl.block "b" (%v = spatial %i) reads() writes(%b[%v] : memref<?xf32>, %c[%v] : memref<?xf32>) {
      %x = arith.constant 1.0 : f32
      affine.store %x, %b[%v] : memref<?xf32>
      affine.store %x, %c[%v] : memref<?xf32>
    }
  }
  return %a : memref<?xf32>
}

// -----

// A private function that needs an arena gets one; its callers pass theirs,
// past their own buffers, and record the callee's plan in their arguments
// (%callee's arg1 is @entry's arg0). @entry's arena holds the larger plan.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: (%[[N:.+]]: index, %[[ARENA:.+]]: memref<?xi8> {llmc.arena})
// CHECK-SAME: llmc.arena = {{\[}}[{bytes = 64 : i64, of = []}, {bytes = 64 : i64, of = ["arg0"]}]]
// CHECK: %[[REST:.+]] = memref.view %[[ARENA]][%[[OWN:.+]]][%{{.+}}] : memref<?xi8> to memref<?xi8>
// CHECK: call @callee(%{{.+}}, %[[N]], %[[REST]])
// CHECK-LABEL: func.func private @callee
// CHECK-SAME: %{{.+}}: memref<?xi8> {llmc.arena}
// CHECK-SAME: llmc.arena = {{\[}}[{bytes = 64 : i64, of = ["arg1"]}]]
func.func @entry(%n: index) {
  %c0 = arith.constant 0 : index
  %a = memref.alloc() : memref<4xf32>
  %x = arith.constant 1.0 : f32
  memref.store %x, %a[%c0] : memref<4xf32>
  call @callee(%c0, %n) : (index, index) -> ()
  memref.store %x, %a[%c0] : memref<4xf32>
  return
}
func.func private @callee(%unused: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = memref.alloc(%n) : memref<?xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.block "b" (%v = spatial %i) reads() writes(%b[%v] : memref<?xf32>) {
      %x = arith.constant 1.0 : f32
      affine.store %x, %b[%v] : memref<?xf32>
    }
  }
  return
}

// -----

// The callee's arena is sized by its arguments: one that is not an argument
// of the caller cannot be.
func.func @computed(%n: index) {
  %m = arith.addi %n, %n : index
  // expected-error @+1 {{tl-plan-arena: cannot size the arena of @sized here: its operand #0 is not an argument of @computed}}
  call @sized(%m) : (index) -> ()
  return
}
func.func private @sized(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %b = memref.alloc(%n) : memref<?xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.block "b" (%v = spatial %i) reads() writes(%b[%v] : memref<?xf32>) {
      %x = arith.constant 1.0 : f32
      affine.store %x, %b[%v] : memref<?xf32>
    }
  }
  return
}
