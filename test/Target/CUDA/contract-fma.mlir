// RUN: llm-opt %s -pass-pipeline='builtin.module(gpu.module(cuda-contract-fma))' | FileCheck %s

// The kernels' float multiplies, adds and subtractions may contract (other
// flags kept); integer arithmetic and divisions are left alone.
// CHECK-LABEL: gpu.func @dot
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<nnan,contract> : f32
// CHECK: arith.subf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.muli %{{.*}}, %{{.*}} : i32
gpu.module @llmc_kernels {
  gpu.func @dot(%x: memref<?xf32>, %i: i32) kernel {
    %c0 = arith.constant 0 : index
    %a = memref.load %x[%c0] : memref<?xf32>
    %p = arith.mulf %a, %a : f32
    %s = arith.addf %p, %a fastmath<nnan> : f32
    %d = arith.subf %s, %a : f32
    %q = arith.divf %d, %a : f32
    %j = arith.muli %i, %i : i32
    memref.store %q, %x[%c0] : memref<?xf32>
    gpu.return
  }
}
