// RUN: llm-opt %s -tl-default-schedule="target=vulkan:1.3,subgroup=32" -tl-verify-parallel -canonicalize | FileCheck %s --check-prefixes=CHECK,VK
// RUN: llm-opt %s -tl-default-schedule="target=cuda:sm_90" -tl-verify-parallel -canonicalize | FileCheck %s --check-prefixes=CHECK,CUDA

// Launch fusion, the GPU schedule's last rule: a decode step's products of
// one input (Q: 64 outputs, K and V: 32) become one launch, each part
// under its guard: on Vulkan a workgroup an output (64 + 32 + 32), on CUDA
// (16-byte loads, 4 outputs a workgroup) 16 + 8 + 8; the add that reads K
// and V waits for them in a launch of its own.
// CHECK-LABEL: func.func @qkv
// VK: tl.for %[[W:.*]] = %{{.*}} to %c128 step %{{.*}} kind(thread_bound) thread("blockIdx.x")
// CUDA: tl.for %[[W:.*]] = %{{.*}} to %c32 step %{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK: tl.for %{{.*}} = %[[W]] to %{{.*}} step
// CHECK: tl.block "q
// VK: arith.maxui %[[W]], %c64
// CUDA: arith.maxui %[[W]], %c16
// CHECK: tl.block "k
// VK: arith.maxui %[[W]], %c96
// CUDA: arith.maxui %[[W]], %c24
// CHECK: tl.block "v
// (No fourth part's guard, no grid of its own.)
// CHECK-NOT: arith.maxui
// CHECK-NOT: thread("blockIdx
// CHECK: tl.block "mix"
// CHECK: return
func.func @qkv(%h: memref<1x256xf32>, %wq: memref<64x256xf16>, %wk: memref<32x256xf16>, %wv: memref<32x256xf16>, %q: memref<1x64xf32>, %k: memref<1x32xf32>, %v: memref<1x32xf32>, %z: memref<1x32xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  tl.for %o = %c0 to %c64 step %c1 {
    tl.for %i = %c0 to %c256 step %c1 {
      tl.block "q" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x256xf32>, %wq[%vo, %vi] : memref<64x256xf16>, %q[%vt, %vo] : memref<1x64xf32>) writes(%q[%vt, %vo] : memref<1x64xf32>) init {
        affine.store %cst, %q[symbol(%vt), symbol(%vo)] : memref<1x64xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x256xf32>
        %1 = affine.load %wq[symbol(%vo), symbol(%vi)] : memref<64x256xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %q[symbol(%vt), symbol(%vo)] : memref<1x64xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %q[symbol(%vt), symbol(%vo)] : memref<1x64xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c256 step %c1 {
      tl.block "k" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x256xf32>, %wk[%vo, %vi] : memref<32x256xf16>, %k[%vt, %vo] : memref<1x32xf32>) writes(%k[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %k[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x256xf32>
        %1 = affine.load %wk[symbol(%vo), symbol(%vi)] : memref<32x256xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %k[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %k[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    tl.for %i = %c0 to %c256 step %c1 {
      tl.block "v" (%vt = spatial %c0, %vo = spatial %o, %vi = reduce %i) reads(%h[%vt, %vi] : memref<1x256xf32>, %wv[%vo, %vi] : memref<32x256xf16>, %v[%vt, %vo] : memref<1x32xf32>) writes(%v[%vt, %vo] : memref<1x32xf32>) init {
        affine.store %cst, %v[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      } {
        %0 = affine.load %h[symbol(%vt), symbol(%vi)] : memref<1x256xf32>
        %1 = affine.load %wv[symbol(%vo), symbol(%vi)] : memref<32x256xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %v[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %v[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      }
    }
  }
  tl.for %o = %c0 to %c32 step %c1 {
    tl.block "mix" (%vt = spatial %c0, %vo = spatial %o) reads(%k[%vt, %vo] : memref<1x32xf32>, %v[%vt, %vo] : memref<1x32xf32>) writes(%z[%vt, %vo] : memref<1x32xf32>) {
      %0 = affine.load %k[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %1 = affine.load %v[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
      %2 = arith.addf %0, %1 : f32
      affine.store %2, %z[symbol(%vt), symbol(%vo)] : memref<1x32xf32>
    }
  }
  return
}

// A layer's key and value stores into its KV cache (2 heads of 128): a
// workgroup per head, all 128 elements its threads (twice the 64 threads a
// workgroup would take: the grid then has one axis), and the two stores,
// apart in the cache's first index, one launch of 2 + 2 workgroups.
// CHECK-LABEL: func.func @kv_stores
// CHECK: tl.for %[[W:.*]] = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK: tl.for {{.*}} to %c128 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "kv_store"
// CHECK: arith.maxui %[[W]], %c2
// CHECK: tl.for {{.*}} to %c128 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "kv_store_v"
// CHECK-NOT: thread("blockIdx
// CHECK: return
func.func @kv_stores(%k: memref<1x256xf32>, %v: memref<1x256xf32>, %kv: memref<2x2x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  tl.for %h = %c0 to %c2 step %c1 {
    tl.for %d = %c0 to %c128 step %c1 {
      tl.block "kv_store" (%vh = spatial %h, %vd = spatial %d) reads(%k[0, %vh * 128 + %vd] : memref<1x256xf32>) writes(%kv[0, %vh, %vd] : memref<2x2x128xf32>) {
        %x = affine.load %k[0, symbol(%vh) * 128 + symbol(%vd)] : memref<1x256xf32>
        affine.store %x, %kv[0, symbol(%vh), symbol(%vd)] : memref<2x2x128xf32>
      }
    }
  }
  tl.for %h = %c0 to %c2 step %c1 {
    tl.for %d = %c0 to %c128 step %c1 {
      tl.block "kv_store_v" (%vh = spatial %h, %vd = spatial %d) reads(%v[0, %vh * 128 + %vd] : memref<1x256xf32>) writes(%kv[1, %vh, %vd] : memref<2x2x128xf32>) {
        %x = affine.load %v[0, symbol(%vh) * 128 + symbol(%vd)] : memref<1x256xf32>
        affine.store %x, %kv[1, symbol(%vh), symbol(%vd)] : memref<2x2x128xf32>
      }
    }
  }
  return
}
