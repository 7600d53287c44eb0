// RUN: llm-opt %s -split-input-file -vulkan-kernel-abi="target=vulkan,range=32K" -verify-diagnostics | FileCheck %s

// The dispatch program: per phase the launches in order, each buffer bound
// at its byte offset in one of the entry's buffers (here the arena at
// tokens * 256, and weights at 4096), its dynamic sizes and the scalars as
// expressions of the call's sizes; the host's copy into the logits too. The
// kernel's memrefs become one-dimensional, each followed by its dynamic
// sizes, the accesses linearized with the old strides. Each binding says
// whether the kernel writes it (x: stored; w: only loaded).

// CHECK: llmc.dispatch = "{\22kernels\22:[{\22name\22:\22k\22,\22workgroup\22:[64,1,1]}]
// CHECK-SAME: \22phases\22:{\22prefill\22:[{\22args\22:[{\22scalar\22:\22tokens\22},{\22buffer\22:\22arena\22,\22bytes\22:[\22*\22,[\22+\22,[\22+\22,[\22*\22,[\22-\22,\22tokens\22,1],64],63],1],4],\22offset\22:[\22*\22,\22tokens\22,256],\22writes\22:true},{\22scalar\22:\22tokens\22},{\22buffer\22:\22weights\22,\22bytes\22:16384,\22offset\22:4096,\22writes\22:false}],\22grid\22:[1,\22tokens\22,1],\22kernel\22:0}
// CHECK-SAME: {\22copy\22:{\22bytes\22:
// CHECK-SAME: \22dst\22:{\22buffer\22:\22logits\22,\22offset\22:0}
// CHECK-SAME: \22src\22:{\22buffer\22:\22arena\22,\22offset\22:[\22*\22,\22tokens\22,256]}
// CHECK: func.func private @forward_prefill
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: memref.copy
// CHECK: gpu.func @k(%[[N:.*]]: index, %[[X:.*]]: memref<?xf32>, %[[XN:.*]]: index, %[[W:.*]]: memref<?xf32>)
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>
// CHECK: %[[ROW:.*]] = gpu.block_id y
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: arith.muli %[[ROW]], %c64
// CHECK: memref.load %[[W]][%{{.*}}] : memref<?xf32>
// CHECK: memref.alloca() : memref<4xf32, #spirv.storage_class<Function>>
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
    gpu.launch_func @llmc_kernels::@k blocks in (%c1, %n, %c1) threads in (%c64, %c1, %c1) args(%n : index, %x : memref<?x64xf32>, %w : memref<64x64xf32>)
    memref.copy %x, %logits : memref<?x64xf32> to memref<?x64xf32>
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @k(%n: index, %x: memref<?x64xf32>, %w: memref<64x64xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %row = gpu.block_id y
      %t = gpu.thread_id x
      %v = memref.load %w[%row, %t] : memref<64x64xf32>
      %tmp = memref.alloca() : memref<4xf32>
      memref.store %v, %tmp[%c0] : memref<4xf32>
      %u = memref.load %tmp[%c0] : memref<4xf32>
      memref.store %u, %x[%row, %t] : memref<?x64xf32>
      gpu.return
    }
  }
}

// -----

// A host op that writes memory, which no launch or copy expresses.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %f = arith.constant 0.0 : f32
    // expected-error @+1 {{is a host operation the dispatch program cannot express}}
    memref.store %f, %logits[%c0, %c0] : memref<?x64xf32>
    return
  }
  gpu.module @llmc_kernels {
  }
}

// -----

// A launch operand computed from something other than the entry's sizes.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{the dispatch program cannot express this operation}}
    %r = arith.xori %pos0, %c1 : index
    gpu.launch_func @llmc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%r : index)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @k(%n: index) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// A truncating signed division: not the program's floordiv on negatives.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    // expected-error @+1 {{the dispatch program cannot express this operation}}
    %r = arith.divsi %pos0, %c2 : index
    gpu.launch_func @llmc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%r : index)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @k(%n: index) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// A binding of 64K bytes where the target binds at most 32K (range=32K),
// of a dynamic type (which windows do not take: their count is the type's).
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %w = memref.view %weights[%c0][%c128] : memref<?xi8> to memref<?x128xf32>
    // expected-error @+1 {{binds 65536 bytes of the weights buffer; the target binds at most 32768}}
    gpu.launch_func @llmc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%w : memref<?x128xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @k(%w: memref<?x128xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// An i64 scalar: the kernels' scalars are 32-bit.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c1 = arith.constant 1 : index
    %p = arith.index_cast %pos0 : index to i64
    // expected-error @+1 {{passes a scalar of type 'i64', which the dispatch program cannot hold (index or i32)}}
    gpu.launch_func @llmc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%p : i64)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @k(%p: i64) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}

// -----

// f64 arithmetic on a target without fp64 (bare vulkan): named, before the
// SPIR-V conversion fails on it.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %x = memref.view %arena[%c0][] : memref<?xi8> to memref<4xf32>
    gpu.launch_func @llmc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @k(%x: memref<4xf32>) kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %v = memref.load %x[%c0] : memref<4xf32>
      // expected-error @+1 {{computes with 'f64', which needs the target feature fp64}}
      %d = arith.extf %v : f32 to f64
      %w = arith.truncf %d : f64 to f32
      memref.store %w, %x[%c0] : memref<4xf32>
      gpu.return
    }
  }
}

// -----

// The workgroup's memory (an attribution the GPU schedule's workgroup
// reduction made): a buffer of the Workgroup storage class, which the
// SPIR-V conversion makes a module variable of; it follows the kernel's
// new arguments out of the way.
// CHECK: gpu.func @shared(%[[X:.*]]: memref<?xf32>) kernel
// CHECK: %[[P:.*]] = memref.alloc() : memref<64xf32, #spirv.storage_class<Workgroup>>
// CHECK: memref.store %{{.*}}, %[[P]][%{{.*}}] : memref<64xf32, #spirv.storage_class<Workgroup>>
// CHECK: gpu.barrier
// CHECK: memref.load %[[P]]
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %x = memref.view %arena[%c0][] : memref<?xi8> to memref<64xf32>
    gpu.launch_func @llmc_kernels::@shared blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<64xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @shared(%x: memref<64xf32>) workgroup(%p : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<64xf32>
      memref.store %v, %p[%t] : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.barrier
      %u = memref.load %p[%c0] : memref<64xf32, #gpu.address_space<workgroup>>
      memref.store %u, %x[%t] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

// The workgroup's memory is retyped to the Workgroup storage class: a use
// other than a load or store is refused.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %x = memref.view %arena[%c0][] : memref<?xi8> to memref<64xf32>
    gpu.launch_func @llmc_kernels::@shared blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%x : memref<64xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @shared(%x: memref<64xf32>) workgroup(%p : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{uses a workgroup buffer in a way the Vulkan ABI cannot retype}}
      %d = memref.dim %p, %c0 : memref<64xf32, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
}


// -----

// A weight matrix past the target's range (64 KB, range=32K) is bound in two
// windows of 32 KB (bindings at 4096 and 36864), the kernel taking an
// argument each; a load reads the window its element lies in.
// CHECK: \22args\22:[{\22buffer\22:\22weights\22,\22bytes\22:32768,\22offset\22:4096,\22writes\22:false},{\22buffer\22:\22weights\22,\22bytes\22:32768,\22offset\22:36864,\22writes\22:false},{\22buffer\22:\22arena\22
// CHECK: gpu.func @wide(%[[W0:.*]]: memref<?xf32>, %[[W1:.*]]: memref<?xf32>, %{{.*}}: memref<?xf32>)
// CHECK: %[[WHICH:.*]] = arith.divui %[[AT:.*]], %c8192
// CHECK: %[[IN:.*]] = arith.remui %[[AT]], %c8192
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[WHICH]], %c0
// CHECK: scf.if %[[FIRST]] -> (f32)
// CHECK: memref.load %[[W0]][%[[IN]]]
// CHECK: } else {
// CHECK: memref.load %[[W1]][%[[IN]]]
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %c4096 = arith.constant 4096 : index
    %w = memref.view %weights[%c4096][] : memref<?xi8> to memref<128x128xf32>
    %y = memref.view %arena[%c0][] : memref<?xi8> to memref<128xf32>
    gpu.launch_func @llmc_kernels::@wide blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%w : memref<128x128xf32>, %y : memref<128xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @wide(%w: memref<128x128xf32>, %y: memref<128xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c5 = arith.constant 5 : index
      %t = gpu.thread_id x
      %v = memref.load %w[%t, %c5] : memref<128x128xf32>
      memref.store %v, %y[%t] : memref<128xf32>
      gpu.return
    }
  }
}

// -----

// A kernel that writes a buffer past the range: an error (windows are for
// buffers read only).
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %y = memref.view %arena[%c0][] : memref<?xi8> to memref<128x128xf32>
    gpu.launch_func @llmc_kernels::@fill blocks in (%c1, %c1, %c1) threads in (%c128, %c1, %c1) args(%y : memref<128x128xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @fill(%y: memref<128x128xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c5 = arith.constant 5 : index
      %f = arith.constant 1.0 : f32
      %t = gpu.thread_id x
      // expected-error @+1 {{writes a buffer of 65536 bytes, past the target's range of 32768}}
      memref.store %f, %y[%t, %c5] : memref<128x128xf32>
      gpu.return
    }
  }
}

// -----

// Vulkan's kernels do not lower vector accesses (a vectorized loop's loads,
// which the GPU schedule makes for CUDA only): a located error.
module attributes {gpu.container_module} {
  func.func private @forward_decode(%tokens: memref<?xi32>, %pos0: index, %weights: memref<?xi8>, %kv: memref<1x2x1x64xf32>, %n_out: index, %logits: memref<?x64xf32>, %arena: memref<?xi8>) attributes {llmc.phase = "decode"} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %w = memref.view %weights[%c0][] : memref<?xi8> to memref<64xf32>
    gpu.launch_func @llmc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%w : memref<64xf32>)
    return
  }
  gpu.module @llmc_kernels {
    gpu.func @k(%w: memref<64xf32>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{'vector.load' op a vector access, which this target's kernels do not lower (CUDA's do)}}
      %v = vector.load %w[%c0] : memref<64xf32>, vector<4xf32>
      gpu.return
    }
  }
}
