// RUN: llm-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(cuda-async-copies{target=cuda:sm_90}))' | FileCheck %s
// RUN: llm-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(cuda-async-copies{target=cuda:sm_90,-async-copy}))' | FileCheck %s --check-prefix=NONE
// RUN: llm-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(cuda-async-copies{target=cuda:sm_90}),gpu.module(convert-gpu-to-nvvm{index-bitwidth=32}),reconcile-unrealized-casts)' | FileCheck %s --check-prefix=NVVM

// A staged tile (the GPU schedule's copy step: each thread copies elements
// of a row of activations into workgroup memory, then a barrier, then every
// thread reads it): each element copy becomes a cp.async, and the thread
// commits the step's copies as one group and waits for it after the step's
// loops, before the barrier. Without the feature nothing changes.
// CHECK-LABEL: gpu.func @staged
// CHECK: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.load
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 1 : memref<?xf32> to memref<8x64xf32, #gpu.address_space<workgroup>>
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK: memref.load %{{.*}} : memref<8x64xf32, #gpu.address_space<workgroup>>
// NONE-NOT: nvgpu.device_async_copy
// NONE-NOT: nvvm.cp.async
// The copy as convert-gpu-to-nvvm lowers it, with the kernels' 32-bit
// indices: cp.async of 4 bytes into shared memory.
// NVVM-LABEL: llvm.func @staged
// NVVM: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 4, cache = ca : !llvm.ptr<3>, !llvm.ptr<1>
// NVVM: nvvm.cp.async.commit.group
// NVVM-NEXT: nvvm.cp.async.wait.group 0
// NVVM-NOT: nvgpu.
module attributes {gpu.container_module} {
  gpu.module @llmc_kernels {
    gpu.func @staged(%x: memref<?xf32>, %y: memref<?xf32>) workgroup(%tile : memref<8x64xf32, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c64 = arith.constant 64 : index
      %c16 = arith.constant 16 : index
      %c4 = arith.constant 4 : index
      %t = gpu.thread_id x
      scf.for %r = %c0 to %c8 step %c1 {
        scf.for %j = %c0 to %c4 step %c1 {
          %col0 = arith.muli %j, %c16 : index
          %col = arith.addi %col0, %t : index
          %row = arith.muli %r, %c64 : index
          %i = arith.addi %row, %col : index
          %v = memref.load %x[%i] : memref<?xf32>
          memref.store %v, %tile[%r, %col] : memref<8x64xf32, #gpu.address_space<workgroup>>
        }
      }
      gpu.barrier
      %w = memref.load %tile[%c0, %t] : memref<8x64xf32, #gpu.address_space<workgroup>>
      memref.store %w, %y[%t] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// Two copy steps in a row (a product's two operands) are one group; the
// index arithmetic between them does not end it.
// CHECK-LABEL: gpu.func @two_steps
// CHECK: nvgpu.device_async_copy
// CHECK-NOT: nvvm.cp.async
// CHECK: arith.addi
// CHECK: nvgpu.device_async_copy
// CHECK: }
// CHECK-NEXT: nvvm.cp.async.commit.group
// CHECK-NEXT: nvvm.cp.async.wait.group 0
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: nvvm.cp.async
module attributes {gpu.container_module} {
  gpu.module @llmc_kernels {
    gpu.func @two_steps(%x: memref<?xf32>, %z: memref<?xi32>, %y: memref<?xf32>) workgroup(%a : memref<64xf32, #gpu.address_space<workgroup>>, %b : memref<64xi32, #gpu.address_space<workgroup>>) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c16 = arith.constant 16 : index
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<?xf32>
      memref.store %v, %a[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      %t2 = arith.addi %t, %c16 : index
      scf.for %j = %c0 to %c4 step %c1 {
        %i = arith.addi %t2, %j : index
        %u = memref.load %z[%i] : memref<?xi32>
        memref.store %u, %b[%i] : memref<64xi32, #gpu.address_space<workgroup>>
      }
      gpu.barrier
      %w = memref.load %a[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %w, %y[%t] : memref<?xf32>
      gpu.return
    }
  }
}

// -----

// Left as they are: 2-byte elements (cp.async copies 4, 8 or 16 bytes), a
// loaded value used besides its store, a copy within workgroup memory, a
// store into global memory.
// CHECK-LABEL: gpu.func @kept
// CHECK-NOT: nvgpu.device_async_copy
// CHECK-NOT: nvvm.cp.async
// CHECK: gpu.return
module attributes {gpu.container_module} {
  gpu.module @llmc_kernels {
    gpu.func @kept(%h: memref<?xf16>, %x: memref<?xf32>, %y: memref<?xf32>) workgroup(%a : memref<64xf16, #gpu.address_space<workgroup>>, %b : memref<64xf32, #gpu.address_space<workgroup>>, %c : memref<64xf32, #gpu.address_space<workgroup>>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %h[%t] : memref<?xf16>
      memref.store %v, %a[%t] : memref<64xf16, #gpu.address_space<workgroup>>
      %u = memref.load %x[%t] : memref<?xf32>
      memref.store %u, %b[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %u, %y[%t] : memref<?xf32>
      %w = memref.load %b[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %w, %c[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      %z = memref.load %x[%t] : memref<?xf32>
      memref.store %z, %y[%t] : memref<?xf32>
      gpu.return
    }
  }
}
