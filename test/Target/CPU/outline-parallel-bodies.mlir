// RUN: llm-opt %s -cpu-outline-parallel-bodies | FileCheck %s

// The body of the parallel loop becomes a private function taking the
// induction variable and the values it uses, but for constants, which it
// clones (its code sees the indices it uses as constants); its stack buffer
// moves to that function's entry block, and the serial loop's buffer to
// @f's.
// CHECK-LABEL: func.func @f
// CHECK-SAME: (%[[X:.+]]: memref<64xf32>, %[[Y:.+]]: memref<64xf32>)
// CHECK-NEXT: %[[BUF:.+]] = memref.alloca() : memref<4xf32>
// CHECK: scf.parallel (%[[I:.+]]) =
// CHECK-NEXT: func.call @f_par0(%[[I]], %[[X]], %[[Y]]) : (index, memref<64xf32>, memref<64xf32>) -> ()
// CHECK-NEXT: scf.reduce
// CHECK: scf.for
// CHECK-NOT: memref.alloca
// CHECK: func.func private @f_par0(%[[PI:.+]]: index, %[[PX:.+]]: memref<64xf32>, %[[PY:.+]]: memref<64xf32>)
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK-NEXT: %[[T:.+]] = memref.alloca() : memref<1xf32>
// CHECK-NEXT: %[[A:.+]] = memref.load %[[PX]][%[[PI]]]
// CHECK-NEXT: memref.store %[[A]], %[[T]][%[[C0]]]
func.func @f(%x: memref<64xf32>, %y: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %t = memref.alloca() : memref<1xf32>
    %a = memref.load %x[%i] : memref<64xf32>
    memref.store %a, %t[%c0] : memref<1xf32>
    %b = memref.load %t[%c0] : memref<1xf32>
    memref.store %b, %y[%i] : memref<64xf32>
    scf.reduce
  }
  scf.for %j = %c0 to %c64 step %c1 {
    %s = memref.alloca() : memref<4xf32>
    %a = memref.load %y[%j] : memref<64xf32>
    memref.store %a, %s[%c0] : memref<4xf32>
  }
  return
}
