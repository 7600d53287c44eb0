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

module {
  func.func private @k(%x: memref<64xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    tl.for %t = %c0 to %c4 step %c1 kind(thread_bound) thread("threadIdx.x") {
      // expected-error @+1 {{'tl.for' op is vectorized, which a GPU kernel does not lower}}
      tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        %i = arith.muli %t, %c16 : index
        %j = arith.addi %i, %l : index
        tl.block "zero" (%jj = spatial %j) reads() writes(%x[%jj] : memref<64xf32>) {
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
