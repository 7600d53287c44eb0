// RUN: llm-opt %s -split-input-file -cuda-kernel-abi="target=cuda:sm_90,range=1K" -verify-diagnostics

// A buffer past the target's range is bound in windows, read element by
// element: a vector access or a matrix fragment of it (which the GPU schedule
// does not make there) is a located error.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %w = memref.view %weights[%c0][] : memref<?xi8> to memref<64x64xf16>
    gpu.launch_func @llmc_kernels::@v blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%w : memref<64x64xf16>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @v(%w: memref<64x64xf16>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{'vector.load' op a vector access of a buffer bound in windows (past the target's range)}}
      %v = vector.load %w[%c0, %c0] : memref<64x64xf16>, vector<8xf16>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  func.func private @forward_prefill(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "prefill"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %w = memref.view %weights[%c0][] : memref<?xi8> to memref<64x64xf16>
    gpu.launch_func @llmc_kernels::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%w : memref<64x64xf16>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @f(%w: memref<64x64xf16>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{'gpu.subgroup_mma_load_matrix' op reads a fragment of a buffer bound in windows (past the target's range)}}
      %a = gpu.subgroup_mma_load_matrix %w[%c0, %c0] {leadDimension = 64 : index} : memref<64x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  func.func private @forward_prefill(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "prefill"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %y = memref.view %arena[%c0][] : memref<?xi8> to memref<64x64xf32>
    gpu.launch_func @llmc_kernels::@s blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%y : memref<64x64xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @s(%y: memref<64x64xf32>) kernel {
      %c0 = arith.constant 0 : index
      %z = arith.constant 0.0 : f32
      %C = gpu.subgroup_mma_constant_matrix %z : !gpu.mma_matrix<16x16xf32, "COp">
      // expected-error @+1 {{'gpu.subgroup_mma_store_matrix' op writes a buffer of 16384 bytes, past the target's range of 1024}}
      gpu.subgroup_mma_store_matrix %C, %y[%c0, %c0] {leadDimension = 64 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<64x64xf32>
      gpu.return
    }
  }
}
