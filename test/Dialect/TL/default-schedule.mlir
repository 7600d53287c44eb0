// RUN: llm-opt %s -tl-default-schedule="target=cpu:znver4" | FileCheck %s --check-prefixes=CHECK,AVX512
// RUN: llm-opt %s -tl-default-schedule="target=cpu:x86-64-v3" | FileCheck %s --check-prefixes=CHECK,AVX2

// The CPU default schedule, chosen from the target's vector width: the
// outermost loop of a big enough nest on threads; a decode matmul (one
// token) as register tiles of 4 weight rows, each output's partials in four
// vectors of lanes (16 on AVX-512, 8 on AVX2) accumulated with FMAs and summed
// in a halving tree; a prefill matmul as tiles of 4 tokens x 4 rows, one
// vector of lanes per output; elementwise ops in vector lanes.

// CHECK-LABEL: func.func @decode
// CHECK: tl.for {{.*}} kind(parallel)
// AVX512: tl.for {{.*}} to %c64{{.*}} kind(vectorized)
// AVX512-NEXT: tl.block "matmul_rf_init"
// AVX2: tl.for {{.*}} to %c32{{.*}} kind(vectorized)
// AVX2-NEXT: tl.block "matmul_rf_init"
// CHECK: tl.for {{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} kind(vectorized)
// CHECK: tl.block "matmul_rf"
// CHECK: math.fma
// CHECK: tl.block "matmul_tree0"
// CHECK: tl.block "matmul" (

// CHECK-LABEL: func.func @prefill
// CHECK: tl.for {{.*}} kind(parallel)
// CHECK: tl.for {{.*}} kind(unrolled)
// CHECK: tl.for {{.*}} kind(unrolled)
// AVX512: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// AVX2: tl.for {{.*}} to %c8{{.*}} kind(vectorized)
// CHECK: tl.block "matmul_rf_init"
// CHECK: tl.block "matmul_rf"
// CHECK: math.fma
// The tokens after the last whole tile of four: the same lanes.
// CHECK: tl.block "matmul_tail_rf"

// CHECK-LABEL: func.func @add
// CHECK: tl.for {{.*}} kind(parallel)
// AVX512: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// AVX2: tl.for {{.*}} to %c8{{.*}} kind(vectorized)
// CHECK: tl.block "add"

// bf16 products where the target has AVX512-BF16 (znver4): VDPBF16PS's
// order, pairs of elements per lane with the odd one first (the pair loop
// reversed, a group of the vector), two accumulators of 16 lanes per
// 64-element step (ggml_vec_dot_bf16), each reduced by its own tree
// (segments of 16) and then added. AVX2 has no such instruction: FMA lanes.
// CHECK-LABEL: func.func @decode_bf16
// AVX512: tl.for {{.*}} to %c2{{.*}} kind(vectorized)
// AVX512: tl.for {{.*}} to %c16{{.*}} kind(vectorized)
// AVX512: tl.for {{.*}} to %c2{{.*}} kind(vectorized)
// AVX512-NEXT: affine.apply #{{.*}}(%{{.*}})
// AVX512: tl.block "matmul_rf"
// AVX512-NOT: math.fma
// AVX512: tl.block "matmul_tree0" ({{.*}}) reads(%{{.*}}[%{{.*}}, %{{.*}} * 16 + %{{.*}}] : memref<4x32xf32>, %{{.*}}[%{{.*}}, %{{.*}} * 16 + %{{.*}} + 8] : memref<4x32xf32>)
// AVX512: tl.block "matmul" ({{.*}} = reduce
// AVX2: tl.block "matmul_rf"
// AVX2: math.fma

  func.func @decode(%arg0: memref<1x256xf32>, %arg1: memref<64x256xf32>) -> memref<1x64xf32> attributes {llmc.phase = "decode", llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %c64 = arith.constant 64 : index
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x64xf32>
    tl.for %arg2 = %c0 to %c64 step %c1 {
      tl.for %arg3 = %c0 to %c256 step %c1 {
        tl.block "matmul" (%arg4 = spatial %c0, %arg5 = spatial %arg2, %arg6 = reduce %arg3) reads(%arg0[%arg4, %arg6] : memref<1x256xf32>, %arg1[%arg5, %arg6] : memref<64x256xf32>, %alloc[%arg4, %arg5] : memref<1x64xf32>) writes(%alloc[%arg4, %arg5] : memref<1x64xf32>) init {
          affine.store %cst, %alloc[symbol(%arg4), symbol(%arg5)] : memref<1x64xf32>
        } {
          %0 = affine.load %arg0[symbol(%arg4), symbol(%arg6)] : memref<1x256xf32>
          %1 = affine.load %arg1[symbol(%arg5), symbol(%arg6)] : memref<64x256xf32>
          %2 = affine.load %alloc[symbol(%arg4), symbol(%arg5)] : memref<1x64xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %alloc[symbol(%arg4), symbol(%arg5)] : memref<1x64xf32>
        }
      }
    }
    return %alloc : memref<1x64xf32>
  }
  func.func @prefill(%arg0: memref<?x256xf32>, %arg1: memref<64x256xf32>) -> memref<?x64xf32> attributes {llmc.phase = "prefill", llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?x256xf32>
    %dim_0 = memref.dim %arg0, %c0 : memref<?x256xf32>
    %alloc = memref.alloc(%dim_0) {alignment = 64 : i64} : memref<?x64xf32>
    tl.for %arg2 = %c0 to %dim step %c1 {
      tl.for %arg3 = %c0 to %c64 step %c1 {
        tl.for %arg4 = %c0 to %c256 step %c1 {
          tl.block "matmul" (%arg5 = spatial %arg2, %arg6 = spatial %arg3, %arg7 = reduce %arg4) reads(%arg0[%arg5, %arg7] : memref<?x256xf32>, %arg1[%arg6, %arg7] : memref<64x256xf32>, %alloc[%arg5, %arg6] : memref<?x64xf32>) writes(%alloc[%arg5, %arg6] : memref<?x64xf32>) init {
            affine.store %cst, %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
          } {
            %0 = affine.load %arg0[symbol(%arg5), symbol(%arg7)] : memref<?x256xf32>
            %1 = affine.load %arg1[symbol(%arg6), symbol(%arg7)] : memref<64x256xf32>
            %2 = affine.load %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
            %3 = arith.mulf %0, %1 : f32
            %4 = arith.addf %2, %3 : f32
            affine.store %4, %alloc[symbol(%arg5), symbol(%arg6)] : memref<?x64xf32>
          }
        }
      }
    }
    return %alloc : memref<?x64xf32>
  }
  func.func @add(%arg0: memref<?x256xf32>, %arg1: memref<?x256xf32>) -> memref<?x256xf32> attributes {llvm.emit_c_interface} {
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?x256xf32>
    %dim_0 = memref.dim %arg0, %c0 : memref<?x256xf32>
    %alloc = memref.alloc(%dim_0) {alignment = 64 : i64} : memref<?x256xf32>
    tl.for %arg2 = %c0 to %dim step %c1 {
      tl.for %arg3 = %c0 to %c256 step %c1 {
        tl.block "add" (%arg4 = spatial %arg2, %arg5 = spatial %arg3) reads(%arg0[%arg4, %arg5] : memref<?x256xf32>, %arg1[%arg4, %arg5] : memref<?x256xf32>) writes(%alloc[%arg4, %arg5] : memref<?x256xf32>) {
          %0 = affine.load %arg0[symbol(%arg4), symbol(%arg5)] : memref<?x256xf32>
          %1 = affine.load %arg1[symbol(%arg4), symbol(%arg5)] : memref<?x256xf32>
          %2 = arith.addf %0, %1 : f32
          affine.store %2, %alloc[symbol(%arg4), symbol(%arg5)] : memref<?x256xf32>
        }
      }
    }
    return %alloc : memref<?x256xf32>
  }

  func.func @decode_bf16(%arg0: memref<1x128xf32>, %arg1: memref<8x128xbf16>) -> memref<1x8xf32> attributes {llmc.phase = "decode", llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %c8 = arith.constant 8 : index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x128xbf16>
    tl.for %arg2 = %c0 to %c128 step %c1 {
      tl.block "act_round" (%arg3 = spatial %c0, %arg4 = spatial %arg2) reads(%arg0[%arg3, %arg4] : memref<1x128xf32>) writes(%alloc[%arg3, %arg4] : memref<1x128xbf16>) {
        %0 = affine.load %arg0[symbol(%arg3), symbol(%arg4)] : memref<1x128xf32>
        %1 = arith.truncf %0 : f32 to bf16
        affine.store %1, %alloc[symbol(%arg3), symbol(%arg4)] : memref<1x128xbf16>
      }
    }
    %alloc_0 = memref.alloc() {alignment = 64 : i64} : memref<1x8xf32>
    tl.for %arg2 = %c0 to %c8 step %c1 {
      tl.for %arg3 = %c0 to %c128 step %c1 {
        tl.block "matmul" (%arg4 = spatial %c0, %arg5 = spatial %arg2, %arg6 = reduce %arg3) reads(%alloc[%arg4, %arg6] : memref<1x128xbf16>, %arg1[%arg5, %arg6] : memref<8x128xbf16>, %alloc_0[%arg4, %arg5] : memref<1x8xf32>) writes(%alloc_0[%arg4, %arg5] : memref<1x8xf32>) init {
          affine.store %cst, %alloc_0[symbol(%arg4), symbol(%arg5)] : memref<1x8xf32>
        } {
          %0 = affine.load %alloc[symbol(%arg4), symbol(%arg6)] : memref<1x128xbf16>
          %1 = arith.extf %0 : bf16 to f32
          %2 = affine.load %arg1[symbol(%arg5), symbol(%arg6)] : memref<8x128xbf16>
          %3 = arith.extf %2 : bf16 to f32
          %4 = affine.load %alloc_0[symbol(%arg4), symbol(%arg5)] : memref<1x8xf32>
          %5 = arith.mulf %1, %3 : f32
          %6 = arith.addf %4, %5 : f32
          affine.store %6, %alloc_0[symbol(%arg4), symbol(%arg5)] : memref<1x8xf32>
        }
      }
    }
    return %alloc_0 : memref<1x8xf32>
  }
