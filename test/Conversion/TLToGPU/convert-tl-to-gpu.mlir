// RUN: llm-opt %s -split-input-file -convert-tl-to-gpu -verify-diagnostics | FileCheck %s

// A kernel with tokens on blockIdx.y, columns split into workgroups of 64
// threads (the last one partial): one gpu.func with the ids in place of the
// loops and the partial tile's idle threads guarded; the call becomes a
// launch whose grid the caller computes from the call's operands.

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[A:.*]]: memref<?x1000xf32>, %[[B:.*]]: memref<?x1000xf32>)
// CHECK: %[[N:.*]] = memref.dim %[[A]]
// CHECK: gpu.launch_func @llmc_kernels::@forward.add blocks in (%c16{{.*}}, %[[N]], %c1{{.*}}) threads in (%c64{{.*}}, %c1{{.*}}, %c1{{.*}}) args(%[[N]] : index, %[[A]] : memref<?x1000xf32>, %[[B]] : memref<?x1000xf32>)
// CHECK-NOT: call @forward.add
// CHECK: gpu.module @llmc_kernels
// CHECK: gpu.func @forward.add(%[[KN:.*]]: index, %[[KA:.*]]: memref<?x1000xf32>, %[[KB:.*]]: memref<?x1000xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK-DAG: %[[ROW:.*]] = gpu.block_id y
// CHECK-DAG: %[[TILE:.*]] = gpu.block_id x
// CHECK: %[[LAST:.*]] = arith.minui
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[T]], %[[LAST]]
// CHECK: scf.if %[[IN]]
// CHECK: memref.load %[[KA]][%[[ROW]], %{{.*}}]
// CHECK: memref.store
// CHECK: gpu.return
module {
  func.func @forward(%a: memref<?x1000xf32>, %b: memref<?x1000xf32>) {
    %c0 = arith.constant 0 : index
    %n = memref.dim %a, %c0 : memref<?x1000xf32>
    call @forward.add(%n, %a, %b) : (index, memref<?x1000xf32>, memref<?x1000xf32>) -> ()
    return
  }
  func.func private @forward.add(%n: index, %a: memref<?x1000xf32>, %b: memref<?x1000xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %c1000 = arith.constant 1000 : index
    tl.for %i = %c0 to %n step %c1 kind(thread_bound) thread("blockIdx.y") {
      tl.for %o = %c0 to %c16 step %c1 kind(thread_bound) thread("blockIdx.x") {
        %base = arith.muli %o, %c64 : index
        %left = arith.subi %c1000, %base : index
        %last = arith.minui %c64, %left : index
        tl.for %t = %c0 to %last step %c1 kind(thread_bound) thread("threadIdx.x") {
          %j = arith.addi %base, %t : index
          tl.block "add" (%ii = spatial %i, %jj = spatial %j) reads(%a[%ii, %jj] : memref<?x1000xf32>) writes(%b[%ii, %jj] : memref<?x1000xf32>) {
            %0 = affine.load %a[symbol(%ii), symbol(%jj)] : memref<?x1000xf32>
            %1 = arith.addf %0, %0 : f32
            affine.store %1, %b[symbol(%ii), symbol(%jj)] : memref<?x1000xf32>
          }
        }
      }
    }
    return
  }
}

// -----

// One thread (a loop of one iteration): the reduction runs serially in it.
// CHECK-LABEL: func.func @forward
// CHECK: gpu.launch_func @llmc_kernels::@forward.sum blocks in (%c1{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c1{{.*}}, %c1{{.*}}, %c1{{.*}})
// CHECK: gpu.func @forward.sum
// CHECK-SAME: known_block_size = array<i32: 1, 1, 1>
// CHECK-NOT: scf.if %{{.*}} {
// CHECK: scf.for
module {
  func.func @forward(%x: memref<256xf32>, %s: memref<1xf32>) {
    call @forward.sum(%x, %s) : (memref<256xf32>, memref<1xf32>) -> ()
    return
  }
  func.func private @forward.sum(%x: memref<256xf32>, %s: memref<1xf32>) attributes {llmc.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    tl.for %u = %c0 to %c1 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.for %k = %c0 to %c256 step %c1 {
        tl.block "sum" (%z = spatial %c0, %kk = reduce %k) reads(%x[%kk] : memref<256xf32>, %s[%z] : memref<1xf32>) writes(%s[%z] : memref<1xf32>) init {
          affine.store %cst, %s[symbol(%z)] : memref<1xf32>
        } {
          %0 = affine.load %x[symbol(%kk)] : memref<256xf32>
          %1 = affine.load %s[symbol(%z)] : memref<1xf32>
          %2 = arith.addf %1, %0 : f32
          affine.store %2, %s[symbol(%z)] : memref<1xf32>
        }
      }
    }
    return
  }
}

// -----

// A vectorized loop in a kernel is vector code (the CPU's vectorizer): each
// thread's 4 consecutive elements one vector load, which states the
// alignment it is known to have (buffers start at multiples of 64 bytes;
// t * 4 floats: 16 bytes), the group reduction of its lanes one
// vector.multi_reduction; a load whose first element is at an odd offset
// states none.
// CHECK-LABEL: gpu.func @vec
// CHECK: %[[V:.*]] = vector.load %{{.*}}[%{{.*}}] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
// CHECK: vector.multi_reduction <add>
// CHECK: vector.load %{{.*}}[%{{.*}}] : memref<65xf32>, vector<4xf32>
module {
  func.func private @vec(%x: memref<64xf32>, %u: memref<65xf32>, %y: memref<16xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    tl.for %t = %c0 to %c16 step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.for %l = %c0 to %c4 step %c1 kind(vectorized) {
        %i = arith.muli %t, %c4 : index
        %j = arith.addi %i, %l : index
        tl.block "sum" (%vt = spatial %t, %jj = reduce %j) reads(%x[%jj] : memref<64xf32>, %y[%vt] : memref<16xf32>) writes(%y[%vt] : memref<16xf32>) {
          %a = affine.load %x[symbol(%jj)] : memref<64xf32>
          %s = affine.load %y[symbol(%vt)] : memref<16xf32>
          %r = arith.addf %s, %a : f32
          affine.store %r, %y[symbol(%vt)] : memref<16xf32>
        }
      }
      tl.for %l = %c0 to %c4 step %c1 kind(vectorized) {
        %i = arith.muli %t, %c4 : index
        %j = arith.addi %i, %l : index
        %o = arith.addi %j, %c1 : index
        tl.block "odd" (%vt = spatial %t, %jj = reduce %o) reads(%u[%jj] : memref<65xf32>, %y[%vt] : memref<16xf32>) writes(%y[%vt] : memref<16xf32>) {
          %a = affine.load %u[symbol(%jj)] : memref<65xf32>
          %s = affine.load %y[symbol(%vt)] : memref<16xf32>
          %r = arith.addf %s, %a : f32
          affine.store %r, %y[symbol(%vt)] : memref<16xf32>
        }
      }
    }
    return
  }
}

// -----

module {
  func.func private @k(%x: memref<64xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    tl.for %u = %c0 to %c1 step %c1 {
      // expected-error @+1 {{'tl.for' op is bound to threadIdx.x but is not in the chain of bound loops at the top of the nest}}
      tl.for %t = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "zero" (%jj = spatial %t) reads() writes(%x[%jj] : memref<64xf32>) {
          %z = arith.constant 0.0 : f32
          affine.store %z, %x[symbol(%jj)] : memref<64xf32>
        }
      }
    }
    return
  }
}

// -----

module {
  func.func private @k(%n: index, %x: memref<?xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{'tl.for' op a loop bound to threadIdx.x needs a constant extent (or min(constant, x))}}
    tl.for %t = %c0 to %n step %c1 kind(thread_bound) thread("threadIdx.x") {
      tl.block "zero" (%jj = spatial %t) reads() writes(%x[%jj] : memref<?xf32>) {
        %z = arith.constant 0.0 : f32
        affine.store %z, %x[symbol(%jj)] : memref<?xf32>
      }
    }
    return
  }
}

// -----

// A workgroup's steps (the workgroup reduction of the GPU schedule): the
// stack buffer beside them becomes the workgroup's memory (an attribution),
// every step after the first waits at a barrier, the workgroup is as wide
// as the widest step (64) and the narrower ones are guarded.
// CHECK-LABEL: func.func @forward
// CHECK: gpu.launch_func @llmc_kernels::@forward.sum blocks in (%c8{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c64{{.*}}, %c1{{.*}}, %c1{{.*}})
// CHECK: gpu.func @forward.sum(%{{.*}}: memref<8x256xf32>, %[[OUT:.*]]: memref<8xf32>) workgroup(%[[P:.*]] : memref<64xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 64, 1, 1>}
// CHECK: %[[ROW:.*]] = gpu.block_id x
// CHECK: %[[T0:.*]] = gpu.thread_id x
// CHECK-NOT: scf.if
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %[[P]][%[[T0]]]
// CHECK: gpu.barrier
// CHECK: %[[T1:.*]] = gpu.thread_id x
// CHECK: %[[HALF:.*]] = arith.cmpi ult, %[[T1]], %c32
// CHECK: scf.if %[[HALF]]
// CHECK: memref.store %{{.*}}, %[[P]][%[[T1]]]
// CHECK: gpu.barrier
// CHECK: %[[T2:.*]] = gpu.thread_id x
// CHECK: %[[ONE:.*]] = arith.cmpi ult, %[[T2]], %c1
// CHECK: scf.if %[[ONE]]
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[ROW]]]
// CHECK: gpu.return
module {
  func.func @forward(%x: memref<8x256xf32>, %y: memref<8xf32>) {
    call @forward.sum(%x, %y) : (memref<8x256xf32>, memref<8xf32>) -> ()
    return
  }
  func.func private @forward.sum(%x: memref<8x256xf32>, %y: memref<8xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    tl.for %r = %c0 to %c8 step %c1 kind(thread_bound) thread("blockIdx.x") {
      %p = memref.alloca() : memref<64xf32>
      tl.for %l = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.for %ko = %c0 to %c4 step %c1 {
          %k0 = arith.muli %ko, %c64 : index
          %k = arith.addi %k0, %l : index
          tl.block "part" (%rr = spatial %r, %kk = reduce %k, %ll = spatial %l) reads(%x[%rr, %kk] : memref<8x256xf32>, %p[%ll] : memref<64xf32>) writes(%p[%ll] : memref<64xf32>) {
            %0 = affine.load %x[symbol(%rr), symbol(%kk)] : memref<8x256xf32>
            %1 = affine.load %p[symbol(%ll)] : memref<64xf32>
            %2 = arith.addf %0, %1 : f32
            affine.store %2, %p[symbol(%ll)] : memref<64xf32>
          }
        }
      }
      tl.for %i = %c0 to %c32 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "half" (%ii = spatial %i) reads(%p[%ii] : memref<64xf32>, %p[%ii + 32] : memref<64xf32>) writes(%p[%ii] : memref<64xf32>) {
          %0 = affine.load %p[symbol(%ii)] : memref<64xf32>
          %1 = affine.load %p[symbol(%ii) + 32] : memref<64xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %p[symbol(%ii)] : memref<64xf32>
        }
      }
      tl.for %u = %c0 to %c1 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "out" (%rr = spatial %r) reads(%p[0] : memref<64xf32>) writes(%y[%rr] : memref<8xf32>) {
          %0 = affine.load %p[0] : memref<64xf32>
          affine.store %0, %y[symbol(%rr)] : memref<8xf32>
        }
      }
    }
    return
  }
}

// -----

// Beside other steps, a loop must be a step of its own on threadIdx.x.
module {
  func.func private @k(%x: memref<64xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    tl.for %r = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
      tl.for %t = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "zero" (%jj = spatial %t) reads() writes(%x[%jj] : memref<64xf32>) {
          %z = arith.constant 0.0 : f32
          affine.store %z, %x[symbol(%jj)] : memref<64xf32>
        }
      }
      // expected-error @+1 {{'tl.for' op beside other steps of a workgroup, a loop must be bound to threadIdx.x from 0 with step 1 and a constant extent}}
      tl.for %s = %c0 to %c64 step %c1 {
        tl.block "one" (%jj = spatial %s) reads() writes(%x[%jj] : memref<64xf32>) {
          %z = arith.constant 1.0 : f32
          affine.store %z, %x[symbol(%jj)] : memref<64xf32>
        }
      }
    }
    return
  }
}

// -----

// A buffer every step indexes by its thread (a prompt matmul's sums, whose
// chunk loop runs outside the threads' steps) is each thread's own: a
// stack buffer without that dimension, not workgroup memory; the buffer a
// step reads at other threads' indices (the staged chunk) stays shared.
// CHECK-LABEL: func.func @forward
// CHECK: gpu.func @forward.own({{.*}}) workgroup(%[[S:.*]] : memref<64xf32, #gpu.address_space<workgroup>>) kernel
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<2xf32>
// CHECK: memref.store %{{.*}}, %[[ACC]][%c1]
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[S]][
// CHECK: gpu.barrier
// CHECK: memref.load %[[S]][
// CHECK: memref.load %[[ACC]][%c0]
// CHECK: memref.store %{{.*}}, %[[ACC]][%c0]
// CHECK: gpu.barrier
// CHECK: memref.load %[[ACC]][%c1]
module {
  func.func @forward(%x: memref<8x256xf32>, %y: memref<8x64xf32>) {
    call @forward.own(%x, %y) : (memref<8x256xf32>, memref<8x64xf32>) -> ()
    return
  }
  func.func private @forward.own(%x: memref<8x256xf32>, %y: memref<8x64xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    tl.for %r = %c0 to %c8 step %c1 kind(thread_bound) thread("blockIdx.x") {
      %acc = memref.alloca() : memref<64x2xf32>
      %s = memref.alloca() : memref<64xf32>
      tl.for %l = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "zero" (%ll = spatial %l) reads() writes(%acc[%ll, 0] : memref<64x2xf32>, %acc[%ll, 1] : memref<64x2xf32>) {
          affine.store %zero, %acc[symbol(%ll), 0] : memref<64x2xf32>
          affine.store %zero, %acc[symbol(%ll), 1] : memref<64x2xf32>
        }
      }
      tl.for %c = %c0 to %c4 step %c1 {
        tl.for %l = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
          %k0 = arith.muli %c, %c64 : index
          %k = arith.addi %k0, %l : index
          tl.block "copy" (%rr = spatial %r, %kk = spatial %k, %ll = spatial %l) reads(%x[%rr, %kk] : memref<8x256xf32>) writes(%s[%ll] : memref<64xf32>) {
            %0 = affine.load %x[symbol(%rr), symbol(%kk)] : memref<8x256xf32>
            affine.store %0, %s[symbol(%ll)] : memref<64xf32>
          }
        }
        tl.for %l = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
          tl.for %k = %c0 to %c64 step %c1 {
            tl.block "dot" (%ll = spatial %l, %kk = reduce %k) reads(%s[%kk] : memref<64xf32>, %acc[%ll, 0] : memref<64x2xf32>) writes(%acc[%ll, 0] : memref<64x2xf32>) {
              %0 = affine.load %s[symbol(%kk)] : memref<64xf32>
              %1 = affine.load %acc[symbol(%ll), 0] : memref<64x2xf32>
              %2 = arith.addf %0, %1 : f32
              affine.store %2, %acc[symbol(%ll), 0] : memref<64x2xf32>
            }
          }
        }
      }
      tl.for %l = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "out" (%rr = spatial %r, %ll = spatial %l) reads(%acc[%ll, 0] : memref<64x2xf32>, %acc[%ll, 1] : memref<64x2xf32>) writes(%y[%rr, %ll] : memref<8x64xf32>) {
          %0 = affine.load %acc[symbol(%ll), 0] : memref<64x2xf32>
          %1 = affine.load %acc[symbol(%ll), 1] : memref<64x2xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %y[symbol(%rr), symbol(%ll)] : memref<8x64xf32>
        }
      }
    }
    return
  }
}

// -----

// A workgroup's shared buffer has a static shape.
module {
  func.func private @k(%n: index, %x: memref<64xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    tl.for %r = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
      // expected-error @+1 {{'memref.alloca' op a workgroup's shared buffer needs a static shape}}
      %p = memref.alloca(%n) : memref<?xf32>
      tl.for %t = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "zero" (%jj = spatial %t) reads() writes(%x[%jj] : memref<64xf32>) {
          %z = arith.constant 0.0 : f32
          affine.store %z, %x[symbol(%jj)] : memref<64xf32>
        }
      }
      tl.for %s = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "one" (%jj = spatial %s) reads() writes(%x[%jj] : memref<64xf32>) {
          %z = arith.constant 1.0 : f32
          affine.store %z, %x[symbol(%jj)] : memref<64xf32>
        }
      }
    }
    return
  }
}

// -----

// A block beside a workgroup's steps would run on every thread at once.
module {
  func.func private @k(%x: memref<64xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    tl.for %r = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
      tl.for %t = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "zero" (%jj = spatial %t) reads() writes(%x[%jj] : memref<64xf32>) {
          %z = arith.constant 0.0 : f32
          affine.store %z, %x[symbol(%jj)] : memref<64xf32>
        }
      }
      tl.for %s = %c0 to %c64 step %c1 kind(thread_bound) thread("threadIdx.x") {
        tl.block "one" (%jj = spatial %s) reads() writes(%x[%jj] : memref<64xf32>) {
          %z = arith.constant 1.0 : f32
          affine.store %z, %x[symbol(%jj)] : memref<64xf32>
        }
      }
      // expected-error @+1 {{'tl.block' op a workgroup's steps hold only loops bound to threadIdx.x, serial loops of steps, stack buffers (outside those) and pure ops between them}}
      tl.block "first" () reads() writes(%x[0] : memref<64xf32>) {
        %z = arith.constant 2.0 : f32
        affine.store %z, %x[0] : memref<64xf32>
      }
    }
    return
  }
}


// -----

// A fused launch (fuse_launches): 4 + 1 workgroups. Each part's guard (a
// serial loop from max(id, offset) to min(id + 1, end)) is an scf.for over
// the workgroup's id; the first part's two steps share its workgroup
// buffer with a barrier between them, inside the guard; the second part's
// step is 4 threads wide of the workgroup's 8, the others idle there.
// CHECK-LABEL: func.func @forward
// CHECK: gpu.launch_func @llmc_kernels::@forward.fused blocks in (%c5{{.*}}, %c1{{.*}}, %c1{{.*}}) threads in (%c8{{.*}}, %c1{{.*}}, %c1{{.*}})
// CHECK: gpu.func @forward.fused({{.*}}) workgroup(%[[P:.*]] : memref<8xf32, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 8, 1, 1>}
// CHECK: %[[W:.*]] = gpu.block_id x
// CHECK: %[[E:.*]] = arith.minui
// CHECK: scf.for %{{.*}} = %[[W]] to %[[E]]
// CHECK: memref.store {{.*}}, %[[P]]
// CHECK: gpu.barrier
// CHECK: memref.load %[[P]]
// CHECK: %[[L:.*]] = arith.maxui %[[W]]
// CHECK: scf.for %{{.*}} = %[[L]] to
// CHECK: gpu.barrier
// CHECK: %[[T:.*]] = gpu.thread_id x
// CHECK: arith.cmpi ult, %[[T]], %c4
// CHECK: gpu.return
module {
  func.func @forward(%x: memref<8xf32>, %y: memref<32xf32>, %z: memref<4xf32>) {
    call @forward.fused(%x, %y, %z) : (memref<8xf32>, memref<32xf32>, memref<4xf32>) -> ()
    return
  }
  func.func private @forward.fused(%x: memref<8xf32>, %y: memref<32xf32>, %z: memref<4xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c8 = arith.constant 8 : index
    tl.for %w = %c0 to %c5 step %c1 kind(thread_bound) thread("blockIdx.x") {
      %n = arith.addi %w, %c1 : index
      %e = arith.minui %n, %c4 : index
      %p = memref.alloca() : memref<8xf32>
      tl.for %g = %w to %e step %c1 {
        tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
          tl.block "a_init" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%p[%vt] : memref<8xf32>) {
            %v = affine.load %x[symbol(%vt)] : memref<8xf32>
            affine.store %v, %p[symbol(%vt)] : memref<8xf32>
          }
        }
        tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
          tl.block "a" (%vb = spatial %w, %vt = spatial %t) reads(%p[7 - %vt] : memref<8xf32>) writes(%y[%vb * 8 + %vt] : memref<32xf32>) {
            %v = affine.load %p[7 - symbol(%vt)] : memref<8xf32>
            affine.store %v, %y[symbol(%vb) * 8 + symbol(%vt)] : memref<32xf32>
          }
        }
      }
      %l = arith.maxui %w, %c4 : index
      tl.for %g = %l to %n step %c1 {
        tl.for %t = %c0 to %c4 step %c1 kind(thread_bound) thread("threadIdx.x") {
          tl.block "b" (%vt = spatial %t) reads(%x[%vt] : memref<8xf32>) writes(%z[%vt] : memref<4xf32>) {
            %v = affine.load %x[symbol(%vt)] : memref<8xf32>
            affine.store %v, %z[symbol(%vt)] : memref<4xf32>
          }
        }
      }
    }
    return
  }
}
