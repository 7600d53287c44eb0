// RUN: llm-opt %s -split-input-file -cpu-add-thread-control | FileCheck %s

// With parallel regions, the module exports llmc_set_num_threads, which
// sets the OpenMP thread count.
// CHECK-LABEL: func.func @f
// CHECK: func.func private @omp_set_num_threads(i32)
// CHECK: func.func @llmc_set_num_threads(%[[N:.+]]: i32)
// CHECK-NEXT: call @omp_set_num_threads(%[[N]]) : (i32) -> ()
func.func @f() {
  omp.parallel {
    omp.terminator
  }
  return
}

// -----

// Without, nothing is added.
// CHECK-LABEL: func.func @g
// CHECK-NOT: llmc_set_num_threads
func.func @g() {
  return
}
