// RUN: llm-opt %s -split-input-file -cuda-kernel-abi="target=cuda:sm_90,-fp64" -verify-diagnostics | FileCheck %s

// The dispatch program as on Vulkan (the code is shared): the arena bound at
// tokens * 256 and the weights at 4096, the dynamic sizes and scalars as
// expressions of the call's sizes. The kernel's memrefs become
// one-dimensional, each followed by its dynamic sizes, and stay before the
// workgroup attribution (CUDA's shared memory, kept as such); the stack
// buffer keeps its type (no storage class, no entry point ABI). A kernel's
// name is a PTX identifier: '.' becomes '_' (and "a_b" taken, "a_b_1").

// CHECK: llmc.dispatch = "{\22kernels\22:[{\22name\22:\22a_b_1\22,\22workgroup\22:[64,1,1]},{\22name\22:\22a_b\22,\22workgroup\22:[1,1,1]}]
// CHECK-SAME: \22phases\22:{\22prefill\22:[{\22args\22:[{\22scalar\22:\22tokens\22},{\22buffer\22:\22arena\22,{{.*}}\22offset\22:[\22*\22,\22tokens\22,256],\22writes\22:true},{\22scalar\22:\22tokens\22},{\22buffer\22:\22weights\22,\22bytes\22:16384,\22offset\22:4096,\22writes\22:false}],\22grid\22:[1,\22tokens\22,1],\22kernel\22:0},{\22args\22:[],\22grid\22:[1,1,1],\22kernel\22:1}]
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.func @a_b_1(%[[N:.*]]: index, %[[X:.*]]: memref<?xf32>, %[[XN:.*]]: index, %[[W:.*]]: memref<?xf32>) workgroup(%[[SH:.*]] : memref<64xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-NOT: spirv
// CHECK: %[[ROW:.*]] = gpu.block_id y
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: memref.load %[[W]][%{{.*}}] : memref<?xf32>
// CHECK: memref.store %{{.*}}, %[[SH]][%[[T]]] : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: memref.alloca() : memref<4xf32>
// CHECK: memref.store %{{.*}}, %[[X]][%{{.*}}] : memref<?xf32>
module attributes {gpu.container_module} {
  func.func private @forward_prefill(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "prefill"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %c4096 = arith.constant 4096 : index
    %n = memref.dim %tokens, %c0 : memref<?xi32>
    %off = arith.muli %n, %c256 : index
    %x = memref.view %arena[%off][%n] : memref<?xi8> to memref<?x64xf32>
    %w = memref.view %weights[%c4096][] : memref<?xi8> to memref<64x64xf32>
    gpu.launch_func @llmc_kernels::@a.b blocks in (%c1, %n, %c1) threads in (%c64, %c1, %c1) args(%n : index, %x : memref<?x64xf32>, %w : memref<64x64xf32>)
    gpu.launch_func @llmc_kernels::@a_b blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @a.b(%n: index, %x: memref<?x64xf32>, %w: memref<64x64xf32>) workgroup(%sh : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %row = gpu.block_id y
      %t = gpu.thread_id x
      %v = memref.load %w[%row, %t] : memref<64x64xf32>
      memref.store %v, %sh[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %s = memref.load %sh[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      %tmp = memref.alloca() : memref<4xf32>
      memref.store %s, %tmp[%c0] : memref<4xf32>
      %u = memref.load %tmp[%c0] : memref<4xf32>
      memref.store %u, %x[%row, %t] : memref<?x64xf32>
      gpu.return
    }
    gpu.func @a_b() kernel {
      gpu.return
    }
  }
}

// -----

// The target without f64 arithmetic (-fp64 above): the op that computes
// with it is named.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @llmc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%pos0 : index)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @k(%p: index) kernel {
      %i = arith.index_cast %p : index to i64
      // expected-error @+1 {{computes with 'f64', which needs the target feature fp64 (compile for a device that has it: --target cuda,+fp64}}
      %f = arith.sitofp %i : i64 to f64
      gpu.return
    }
  }
}

// -----

// A matrix band's fragments: loads and stores of one-dimensional buffers at
// their first element's offset, the rows' stride (leading dimension) kept;
// the kernel records the subgroup its fragments belong to, and only the
// stored buffer is written.
// CHECK: llmc.dispatch = "{\22kernels\22:[{\22name\22:\22mm\22,\22subgroup\22:32,\22workgroup\22:[32,1,1]}]
// CHECK-SAME: \22offset\22:0,\22writes\22:false},{\22scalar\22:\22tokens\22},{{.*}}\22offset\22:0,\22writes\22:true}
// CHECK: gpu.func @mm(%[[A:.*]]: memref<?xf16>, %[[AN:.*]]: index, %[[Y:.*]]: memref<?xf32>, %[[YN:.*]]: index)
// CHECK: gpu.subgroup_mma_load_matrix %[[A]][%{{.*}}] {leadDimension = 64 : index} : memref<?xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: gpu.subgroup_mma_load_matrix %[[A]][%{{.*}}] {leadDimension = 64 : index, transpose} : memref<?xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: gpu.subgroup_mma_store_matrix %{{.*}}, %[[Y]][%{{.*}}] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<?xf32>
module attributes {gpu.container_module} {
  func.func private @forward_prefill(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "prefill"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %n = memref.dim %tokens, %c0 : memref<?xi32>
    %a = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?x64xf16>
    %y = memref.view %arena[%c0][%n] : memref<?xi8> to memref<?x16xf32>
    gpu.launch_func @llmc_kernels::@mm blocks in (%c1, %c1, %c1) threads in (%c32, %c1, %c1) args(%a : memref<?x64xf16>, %y : memref<?x16xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @mm(%a: memref<?x64xf16>, %y: memref<?x16xf32>) kernel attributes {known_block_size = array<i32: 32, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %A = gpu.subgroup_mma_load_matrix %a[%c16, %c0] {leadDimension = 64 : index} : memref<?x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
      %B = gpu.subgroup_mma_load_matrix %a[%c0, %c16] {leadDimension = 64 : index, transpose} : memref<?x64xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
      %z = arith.constant 0.0 : f32
      %C = gpu.subgroup_mma_constant_matrix %z : !gpu.mma_matrix<16x16xf32, "COp">
      %D = gpu.subgroup_mma_compute %A, %B, %C {b_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
      gpu.subgroup_mma_store_matrix %D, %y[%c16, %c0] {leadDimension = 16 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<?x16xf32>
      gpu.return
    }
  }
}

// -----

// A lane's vector load (a vectorized loop) of a buffer made one-dimensional:
// its first element's offset, its alignment kept.
// CHECK: gpu.func @vl(%[[W:.*]]: memref<?xf16>)
// CHECK: vector.load %[[W]][%{{.*}}] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %w = memref.view %weights[%c0][] : memref<?xi8> to memref<4x64xf16>
    gpu.launch_func @llmc_kernels::@vl blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%w : memref<4x64xf16>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @vl(%w: memref<4x64xf16>) kernel {
      %c1 = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %v = vector.load %w[%c1, %c8] {alignment = 16 : i64} : memref<4x64xf16>, vector<8xf16>
      gpu.return
    }
  }
}

// -----

// A kernel whose workgroup memory (its attributions: here 64 KiB) passes
// the target's (48K on CUDA): named, with its size (a schedule script that
// stages or fuses more than a workgroup holds).
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c1 = arith.constant 1 : index
    gpu.launch_func @llmc_kernels::@big blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%pos0 : index)
    return
  }
  gpu.module @llmc_kernels {
    // expected-error @+1 {{needs 65536 bytes of workgroup memory; the target's workgroups have 49152 (shared=; a schedule that stages or fuses less)}}
    gpu.func @big(%p: index) workgroup(%a : memref<8192xf32, #gpu.address_space<workgroup>>, %b : memref<8192xf32, #gpu.address_space<workgroup>>) kernel {
      gpu.return
    }
  }
}
