// RUN: llm-opt %s -tl-schedule='script={hoist(dot, 1, 0)}' | FileCheck %s
// RUN: not llm-opt %s -tl-schedule='script={hoist(dot, 0, 0)}' 2>&1 | FileCheck %s --check-prefix=TOKENS
// RUN: not llm-opt %s -tl-schedule='script={hoist(dot, 2, 0)}' 2>&1 | FileCheck %s --check-prefix=NONE

// Nibbles of a weight row group unpacked for every token: the unpacking
// (shift by 4 h, mask) depends on the group g (fixed in an iteration of
// loop 0), the half h and the byte j, not on the token t. Hoisted at loop
// 0: a stack buffer [h * 16 + j] at the start of its body, filled by a nest of
// the loops it uses (h, then j, their kinds: j's lanes stay lanes) with a
// copy of the unpacking; the dot loads it where it unpacked. Its other
// widening (the activation, a bare load) stays; the weight is no longer
// among its reads.
// CHECK-LABEL: func.func @nibbles
// CHECK: tl.for %[[G:.+]] = %{{.+}} to %c4
// CHECK-NEXT: %[[U:.+]] = memref.alloca() {alignment = 64 : i64} : memref<32xi8>
// CHECK: tl.for %[[H:.+]] = %{{.+}} to %c2
// CHECK: tl.for %[[J:.+]] = %{{.+}} to %c16{{.*}} kind(vectorized)
// CHECK-NEXT: tl.block "dot_hoist" (%{{.+}} = spatial %c0{{.*}}, %[[VG:.+]] = spatial %[[G]], %[[VH:.+]] = spatial %[[H]], %[[VJ:.+]] = spatial %[[J]]) reads(%arg1[%[[VG]], %[[VJ]]] : memref<4x16xi8>) writes(%[[U]][%[[VH]] * 16 + %[[VJ]]] : memref<32xi8>)
// CHECK: arith.shrui
// CHECK: arith.andi
// CHECK: affine.store %{{.+}}, %[[U]][symbol(%[[VH]]) * 16 + symbol(%[[VJ]])]
// CHECK: tl.for %[[T:.+]] = %{{.+}} to %arg3
// CHECK: tl.block "dot" (%[[WT:.+]] = spatial %[[T]], %[[WG:.+]] = spatial %[[G]], %[[WH:.+]] = reduce %{{.+}}, %[[WJ:.+]] = reduce %{{.+}}) reads(%arg0[%[[WT]], %[[WH]] * 16 + %[[WJ]]] : memref<?x32xi8>, %arg2[%[[WT]], %[[WG]]] : memref<?x4xi32>, %[[U]][%[[WH]] * 16 + %[[WJ]]] : memref<32xi8>) writes
// CHECK-NOT: arith.shrui
// CHECK: %[[Q:.+]] = affine.load %[[U]][symbol(%[[WH]]) * 16 + symbol(%[[WJ]])]
// CHECK: arith.extui %[[Q]]
// The activation (widening 0) moves with the tokens, a loop of run-time
// extent: it stays.
// TOKENS: error: hoist_value: a loop the value uses must run from 0 by 1 to a constant
// NONE: error: {{.*}}tl.block 'dot' has no widening 2
func.func @nibbles(%a: memref<?x32xi8>, %w: memref<4x16xi8>, %y: memref<?x4xi32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c15 = arith.constant 15 : i8
  %zero = arith.constant 0 : i32
  tl.for %g = %c0 to %c4 step %c1 kind(parallel) {
    tl.for %t = %c0 to %n step %c1 {
      tl.for %h = %c0 to %c2 step %c1 {
        tl.for %j = %c0 to %c16 step %c1 kind(vectorized) {
          tl.block "dot" (%vt = spatial %t, %vg = spatial %g, %vh = reduce %h, %vj = reduce %j) reads(%a[%vt, %vh * 16 + %vj] : memref<?x32xi8>, %w[%vg, %vj] : memref<4x16xi8>, %y[%vt, %vg] : memref<?x4xi32>) writes(%y[%vt, %vg] : memref<?x4xi32>) init {
            affine.store %zero, %y[symbol(%vt), symbol(%vg)] : memref<?x4xi32>
          } {
            %x = affine.load %a[symbol(%vt), symbol(%vh) * 16 + symbol(%vj)] : memref<?x32xi8>
            %b = affine.load %w[symbol(%vg), symbol(%vj)] : memref<4x16xi8>
            %s4 = arith.muli %vh, %c4 : index
            %s = arith.index_castui %s4 : index to i8
            %sh = arith.shrui %b, %s : i8
            %q = arith.andi %sh, %c15 : i8
            %xw = arith.extsi %x : i8 to i32
            %qw = arith.extui %q : i8 to i32
            %p = arith.muli %xw, %qw : i32
            %acc = affine.load %y[symbol(%vt), symbol(%vg)] : memref<?x4xi32>
            %r = arith.addi %acc, %p : i32
            affine.store %r, %y[symbol(%vt), symbol(%vg)] : memref<?x4xi32>
          }
        }
      }
    }
  }
  return
}
