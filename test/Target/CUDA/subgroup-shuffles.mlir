// RUN: llm-opt %s -pass-pipeline='builtin.module(gpu.module(cuda-subgroup-shuffles{target=cuda:sm_90}))' | FileCheck %s

// A warp's sum: five butterfly steps (32 lanes), each a shuffle xor and an
// add; a clustered sum of 8 lanes: three. No subgroup_reduce is left.
// CHECK-LABEL: gpu.func @warp_sum
// CHECK-NOT: gpu.subgroup_reduce
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
// CHECK-LABEL: gpu.func @cluster_sum
// CHECK-NOT: gpu.subgroup_reduce
// CHECK-COUNT-3: gpu.shuffle xor
// CHECK-NOT: gpu.shuffle
// CHECK: gpu.return
gpu.module @llmc_kernels {
  gpu.func @warp_sum(%x: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<?xf32>
    %s = gpu.subgroup_reduce add %v : (f32) -> f32
    memref.store %s, %x[%c0] : memref<?xf32>
    gpu.return
  }
  gpu.func @cluster_sum(%x: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<?xf32>
    %s = gpu.subgroup_reduce add %v cluster(size = 8) : (f32) -> f32
    memref.store %s, %x[%c0] : memref<?xf32>
    gpu.return
  }
}

// An f64 sum (the exact mode's): 64-bit shuffles, still five.
// CHECK-LABEL: gpu.func @f64_sum
// CHECK-NOT: gpu.subgroup_reduce
// CHECK-COUNT-5: gpu.shuffle xor {{.*}} : f64
gpu.module @f64 {
  gpu.func @f64_sum(%x: memref<?xf64>) kernel {
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<?xf64>
    %s = gpu.subgroup_reduce add %v : (f64) -> f64
    memref.store %s, %x[%c0] : memref<?xf64>
    gpu.return
  }
}
