// RUN: llm-opt %s -tl-default-schedule="target=cuda:sm_90" | FileCheck %s
// RUN: llm-opt %s -tl-default-schedule="target=cuda:sm_90,-mma" | FileCheck %s --check-prefix=NOMMA
// RUN: llm-opt %s -tl-default-schedule="target=cuda:sm_90,range=8K" | FileCheck %s --check-prefix=NOMMA
// RUN: llm-opt %s -tl-default-schedule="target=cuda:sm_90" -tl-verify-parallel -o /dev/null

// Two prompt matmuls of the same f32 activations and f16 weights (a layer's
// K and V) on a target with matrix units: the activations held as two f16
// halves by one nest (the second product reads the first's halves), each
// product's whole 32-token tiles a matrix band (kind mma) of 32 tokens by
// 32 outputs per subgroup, 4 subgroups (threadIdx.y) a workgroup of 128
// outputs (blockIdx.x), the tiles on blockIdx.y; the last tokens (fewer
// than a tile) a nest of their own, mapped as before, on the f32 values.
// CHECK-LABEL: func.func @kv
// CHECK: %[[HI:.*]] = memref.alloc({{.*}}) {alignment = 64 : i64} : memref<?x64xf16>
// CHECK: %[[LO:.*]] = memref.alloc({{.*}}) {alignment = 64 : i64} : memref<?x64xf16>
// CHECK: tl.block "k_halves" {{.*}} writes(%[[HI]]{{.*}}, %[[LO]]
// CHECK: arith.truncf
// CHECK: arith.subf
// CHECK: arith.truncf
// CHECK: tl.for {{.*}} kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for {{.*}} to %c1{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK-NEXT: tl.for {{.*}} to %c4{{.*}} kind(thread_bound) thread("threadIdx.y")
// CHECK-NEXT: tl.for {{.*}} to %c32{{.*}} step %c1{{.*}} kind(mma)
// CHECK: tl.for {{.*}} to %c32{{.*}} step %c1{{.*}} kind(mma)
// CHECK: tl.for {{.*}} to %c64{{.*}} step %c1{{.*}} kind(mma)
// CHECK-NEXT: tl.block "k" {{.*}} reads(%[[HI]]{{.*}}, %[[LO]]
// CHECK: arith.extf
// CHECK: arith.extf
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tl.block "k_tail" {{.*}} reads(%arg0
// CHECK-NOT: _halves
// CHECK: kind(mma)
// CHECK: tl.block "v" {{.*}} reads(%[[HI]]{{.*}}, %[[LO]]
// CHECK: tl.block "v_tail"

// Without matrix units (-mma), or with weights past the target's range
// (16 KiB past 8K: bound in windows, which a fragment may span), the
// products keep the f32 activations and the prompt rules of any GPU.
// NOMMA-LABEL: func.func @kv
// NOMMA-NOT: kind(mma)
// NOMMA-NOT: _halves
// NOMMA: return
func.func @kv(%x: memref<?x64xf32>, %wk: memref<128x64xf16>, %wv: memref<128x64xf16>, %k: memref<?x128xf32>, %v: memref<?x128xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  tl.for %t = %c0 to %n step %c1 {
    tl.for %o = %c0 to %c128 step %c1 {
      tl.for %i = %c0 to %c64 step %c1 {
        tl.block "k" (%vt = spatial %t, %vo = spatial %o, %vi = reduce %i) reads(%x[%vt, %vi] : memref<?x64xf32>, %wk[%vo, %vi] : memref<128x64xf16>, %k[%vt, %vo] : memref<?x128xf32>) writes(%k[%vt, %vo] : memref<?x128xf32>) init {
          affine.store %cst, %k[symbol(%vt), symbol(%vo)] : memref<?x128xf32>
        } {
          %0 = affine.load %x[symbol(%vt), symbol(%vi)] : memref<?x64xf32>
          %1 = affine.load %wk[symbol(%vo), symbol(%vi)] : memref<128x64xf16>
          %2 = arith.extf %1 : f16 to f32
          %3 = affine.load %k[symbol(%vt), symbol(%vo)] : memref<?x128xf32>
          %4 = arith.mulf %0, %2 : f32
          %5 = arith.addf %3, %4 : f32
          affine.store %5, %k[symbol(%vt), symbol(%vo)] : memref<?x128xf32>
        }
      }
    }
  }
  tl.for %t = %c0 to %n step %c1 {
    tl.for %o = %c0 to %c128 step %c1 {
      tl.for %i = %c0 to %c64 step %c1 {
        tl.block "v" (%vt = spatial %t, %vo = spatial %o, %vi = reduce %i) reads(%x[%vt, %vi] : memref<?x64xf32>, %wv[%vo, %vi] : memref<128x64xf16>, %v[%vt, %vo] : memref<?x128xf32>) writes(%v[%vt, %vo] : memref<?x128xf32>) init {
          affine.store %cst, %v[symbol(%vt), symbol(%vo)] : memref<?x128xf32>
        } {
          %0 = affine.load %x[symbol(%vt), symbol(%vi)] : memref<?x64xf32>
          %1 = affine.load %wv[symbol(%vo), symbol(%vi)] : memref<128x64xf16>
          %2 = arith.extf %1 : f16 to f32
          %3 = affine.load %v[symbol(%vt), symbol(%vo)] : memref<?x128xf32>
          %4 = arith.mulf %0, %2 : f32
          %5 = arith.addf %3, %4 : f32
          affine.store %5, %v[symbol(%vt), symbol(%vo)] : memref<?x128xf32>
        }
      }
    }
  }
  return
}
