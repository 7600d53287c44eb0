// RUN: llm-opt %s -pass-pipeline='builtin.module(gpu.module(cuda-grid-dependencies{target=cuda:sm_90}))' | FileCheck %s
// RUN: llm-opt %s -pass-pipeline='builtin.module(gpu.module(cuda-grid-dependencies{target=cuda:sm_90,-pdl}))' | FileCheck %s --check-prefix=NONE
// RUN: llm-opt %s -pass-pipeline='builtin.module(gpu.module(cuda-grid-dependencies{target=cuda:sm_80}))' | FileCheck %s --check-prefix=NONE

// Programmatic dependent launch (sm_90): every kernel first waits for the
// grids before it (before any thread touches memory), then lets the next
// one be scheduled; a function that is not a kernel is left alone. Without
// the feature (-pdl, sm_80) nothing changes.
// CHECK-LABEL: gpu.func @k
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK: memref.load
// CHECK-LABEL: gpu.func @helper
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: gpu.return
// NONE-NOT: nvvm.griddepcontrol
module attributes {gpu.container_module} {
  gpu.module @llmc_kernels {
    gpu.func @k(%x: memref<4xf32>, %y: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<4xf32>
      memref.store %v, %y[%c0] : memref<4xf32>
      gpu.return
    }
    gpu.func @helper(%x: memref<4xf32>) {
      gpu.return
    }
  }
}
