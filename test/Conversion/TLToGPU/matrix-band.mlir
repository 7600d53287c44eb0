// RUN: llm-opt %s -split-input-file -convert-tl-to-gpu -verify-diagnostics | FileCheck %s

// A matrix band after the grid and the subgroups' loop (threadIdx.y) runs on
// one subgroup: the workgroup is 32 lanes (threadIdx.x) by the subgroups.
// Its 32 x 32 outputs are 2 x 2 WMMA fragments of sums, zero at first (the
// block's init stores 0); each step of 16 over the reduction loads the row
// tiles' fragments of both halves of a (row-major, the rows' stride the
// leading dimension) and the column tiles' of b (transposed), and adds the
// high half's products into each sum, the low half's (from zero) scaled by
// 2^-11; the sums are stored into out.
// CHECK-LABEL: gpu.func @k
// CHECK-SAME: known_block_size = array<i32: 32, 2, 1>
// CHECK-COUNT-4: gpu.subgroup_mma_constant_matrix
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %c64{{.*}} step %c16{{.*}} iter_args
// CHECK-COUNT-4: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 64 : index} : memref<?x64xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK-COUNT-2: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 64 : index, transpose} : memref<128x64xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: gpu.subgroup_mma_compute {{.*}} {b_transpose}
// CHECK-NEXT: gpu.subgroup_mma_compute {{.*}} {b_transpose}
// CHECK-NEXT: gpu.subgroup_mma_elementwise  mulf
// CHECK-NEXT: gpu.subgroup_mma_elementwise  addf
// CHECK: scf.yield
// CHECK-COUNT-4: gpu.subgroup_mma_store_matrix {{.*}} {leadDimension = 128 : index} : !gpu.mma_matrix<16x16xf32, "COp">, memref<?x128xf32>
// CHECK-NOT: tl.
// CHECK: gpu.return
module {
  func.func private @k(%hi: memref<?x64xf16>, %lo: memref<?x64xf16>, %w: memref<128x64xf16>, %y: memref<?x128xf32>) attributes {llmc.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %n = memref.dim %hi, %c0 : memref<?x64xf16>
    %tiles = arith.divui %n, %c32 : index
    tl.for %t = %c0 to %tiles step %c1 kind(thread_bound) thread("blockIdx.y") {
      tl.for %g = %c0 to %c2 step %c1 kind(thread_bound) thread("threadIdx.y") {
        tl.for %r = %c0 to %c32 step %c1 kind(mma) {
          %row = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%t, %r)
          tl.for %c = %c0 to %c32 step %c1 kind(mma) {
            %col = affine.apply affine_map<(d0, d1) -> (d0 * 32 + d1)>(%g, %c)
            tl.for %k = %c0 to %c64 step %c1 kind(mma) {
              tl.block "matmul" (%vr = spatial %row, %vc = spatial %col, %vk = reduce %k) reads(%hi[%vr, %vk] : memref<?x64xf16>, %lo[%vr, %vk] : memref<?x64xf16>, %w[%vc, %vk] : memref<128x64xf16>, %y[%vr, %vc] : memref<?x128xf32>) writes(%y[%vr, %vc] : memref<?x128xf32>) init {
                affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<?x128xf32>
              } {
                %0 = affine.load %hi[symbol(%vr), symbol(%vk)] : memref<?x64xf16>
                %1 = affine.load %lo[symbol(%vr), symbol(%vk)] : memref<?x64xf16>
                %2 = affine.load %w[symbol(%vc), symbol(%vk)] : memref<128x64xf16>
                %3 = arith.extf %0 : f16 to f32
                %4 = arith.extf %1 : f16 to f32
                %5 = arith.extf %2 : f16 to f32
                %6 = arith.mulf %3, %5 : f32
                %7 = arith.mulf %4, %5 : f32
                %s = arith.constant 4.8828125E-4 : f32
                %ls = arith.mulf %7, %s : f32
                %8 = arith.addf %6, %ls : f32
                %9 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<?x128xf32>
                %10 = arith.addf %9, %8 : f32
                affine.store %10, %y[symbol(%vr), symbol(%vc)] : memref<?x128xf32>
              }
            }
          }
        }
      }
    }
    return
  }
}

// -----

// Without an init the sums start at out's values: each fragment loaded.
// CHECK-LABEL: gpu.func @acc
// CHECK-SAME: known_block_size = array<i32: 32, 1, 1>
// CHECK: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: scf.for
// CHECK: gpu.subgroup_mma_compute
// CHECK-NOT: gpu.subgroup_mma_compute
// CHECK: gpu.subgroup_mma_store_matrix
module {
  func.func private @acc(%a: memref<16x32xf16>, %w: memref<16x32xf16>, %y: memref<16x16xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    tl.for %u = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
      tl.for %r = %c0 to %c16 step %c1 kind(mma) {
        tl.for %c = %c0 to %c16 step %c1 kind(mma) {
          tl.for %k = %c0 to %c32 step %c1 kind(mma) {
            tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x32xf16>, %w[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) {
              %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x32xf16>
              %1 = affine.load %w[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
              %2 = arith.extf %0 : f16 to f32
              %3 = arith.extf %1 : f16 to f32
              %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
              %5 = math.fma %2, %3, %4 : f32
              affine.store %5, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
            }
          }
        }
      }
    }
    return
  }
}

// -----

// A band's lanes are threadIdx.x: a band under a loop bound to it is
// refused.
module {
  func.func private @lanes(%a: memref<16x32xf16>, %w: memref<16x32xf16>, %y: memref<16x16xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    tl.for %u = %c0 to %c1 step %c1 kind(thread_bound) thread("threadIdx.x") {
      // expected-error @+1 {{'tl.for' op a matrix band's lanes are threadIdx.x, which the loops around it bind already}}
      tl.for %r = %c0 to %c16 step %c1 kind(mma) {
        tl.for %c = %c0 to %c16 step %c1 kind(mma) {
          tl.for %k = %c0 to %c32 step %c1 kind(mma) {
            tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x32xf16>, %w[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) {
              %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x32xf16>
              %1 = affine.load %w[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
              %2 = arith.extf %0 : f16 to f32
              %3 = arith.extf %1 : f16 to f32
              %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
              %5 = math.fma %2, %3, %4 : f32
              affine.store %5, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
            }
          }
        }
      }
    }
    return
  }
}

// -----

// A band must follow the chain of bound loops directly.
module {
  func.func private @deep(%a: memref<16x32xf16>, %w: memref<16x32xf16>, %y: memref<16x16xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    tl.for %u = %c0 to %c2 step %c1 kind(thread_bound) thread("threadIdx.y") {
      tl.for %s = %c0 to %c2 step %c1 {
        // expected-error @+1 {{'tl.for' op is a loop of a matrix band (kind mma), which must follow the chain of bound loops at the top of the nest}}
        tl.for %r = %c0 to %c16 step %c1 kind(mma) {
          tl.for %c = %c0 to %c16 step %c1 kind(mma) {
            tl.for %k = %c0 to %c32 step %c1 kind(mma) {
              tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x32xf16>, %w[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) {
                %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x32xf16>
                %1 = affine.load %w[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
                %2 = arith.extf %0 : f16 to f32
                %3 = arith.extf %1 : f16 to f32
                %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
                %5 = math.fma %2, %3, %4 : f32
                affine.store %5, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
              }
            }
          }
        }
      }
    }
    return
  }
}

// -----

// An init copying a residual's element (an add taken into the product): the
// sums start at the residual's fragments.
// CHECK-LABEL: gpu.func @residual
// CHECK: gpu.subgroup_mma_load_matrix %arg2[{{.*}}] {leadDimension = 16 : index} : memref<16x16xf32> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: scf.for
// CHECK: gpu.subgroup_mma_store_matrix {{.*}}, %arg3[
module {
  func.func private @residual(%a: memref<16x32xf16>, %w: memref<16x32xf16>, %r: memref<16x16xf32>, %y: memref<16x16xf32>) attributes {llmc.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    tl.for %u = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
      tl.for %i = %c0 to %c16 step %c1 kind(mma) {
        tl.for %j = %c0 to %c16 step %c1 kind(mma) {
          tl.for %k = %c0 to %c32 step %c1 kind(mma) {
            tl.block "matmul" (%vr = spatial %i, %vc = spatial %j, %vk = reduce %k) reads(%a[%vr, %vk] : memref<16x32xf16>, %w[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>, %r[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) init {
              %x = affine.load %r[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
              affine.store %x, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
            } {
              %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x32xf16>
              %1 = affine.load %w[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
              %2 = arith.extf %0 : f16 to f32
              %3 = arith.extf %1 : f16 to f32
              %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
              %5 = math.fma %2, %3, %4 : f32
              affine.store %5, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
            }
          }
        }
      }
    }
    return
  }
}

// -----

// Both operands split (dequant_halves: a quantized weight's halves): each
// step loads a's two halves and b's two, and per fragment pair adds a * b
// into the sum and aLow * b + a * bLow (into one zeroed fragment) scaled by
// 2^-11.
// CHECK-LABEL: gpu.func @both
// CHECK: scf.for
// CHECK-COUNT-2: gpu.subgroup_mma_load_matrix {{.*}} -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK-COUNT-2: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 32 : index, transpose} : memref<16x32xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK-NEXT: gpu.subgroup_mma_compute %[[AH:[^,]+]], %[[BH:[^,]+]], %{{.*}} {b_transpose}
// CHECK-NEXT: gpu.subgroup_mma_compute %[[AL:[^,]+]], %[[BH]], %[[Z:[^ ]+]] {b_transpose}
// CHECK-NEXT: gpu.subgroup_mma_compute %[[AH]], %[[BL:[^,]+]], %{{.*}} {b_transpose}
// CHECK-NEXT: gpu.subgroup_mma_elementwise  mulf
// CHECK-NEXT: gpu.subgroup_mma_elementwise  addf
module {
  func.func private @both(%ah: memref<16x32xf16>, %al: memref<16x32xf16>, %wh: memref<16x32xf16>, %wl: memref<16x32xf16>, %y: memref<16x16xf32>) attributes {llmc.kernel} {
    %cst = arith.constant 0.000000e+00 : f32
    %s = arith.constant 4.8828125E-4 : f32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    tl.for %g = %c0 to %c1 step %c1 kind(thread_bound) thread("blockIdx.x") {
      tl.for %r = %c0 to %c16 step %c1 kind(mma) {
        tl.for %c = %c0 to %c16 step %c1 kind(mma) {
          tl.for %k = %c0 to %c32 step %c1 kind(mma) {
            tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %k) reads(%ah[%vr, %vk] : memref<16x32xf16>, %al[%vr, %vk] : memref<16x32xf16>, %wh[%vc, %vk] : memref<16x32xf16>, %wl[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) init {
              affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
            } {
              %0 = affine.load %ah[symbol(%vr), symbol(%vk)] : memref<16x32xf16>
              %1 = affine.load %al[symbol(%vr), symbol(%vk)] : memref<16x32xf16>
              %2 = affine.load %wh[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
              %3 = affine.load %wl[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
              %4 = arith.extf %0 : f16 to f32
              %5 = arith.extf %1 : f16 to f32
              %6 = arith.extf %2 : f16 to f32
              %7 = arith.extf %3 : f16 to f32
              %8 = arith.mulf %4, %6 : f32
              %9 = arith.mulf %5, %6 : f32
              %10 = arith.mulf %4, %7 : f32
              %11 = arith.addf %9, %10 : f32
              %12 = arith.mulf %11, %s : f32
              %13 = arith.addf %8, %12 : f32
              %14 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
              %15 = arith.addf %14, %13 : f32
              affine.store %15, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
            }
          }
        }
      }
    }
    return
  }
}
