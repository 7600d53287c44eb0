// RUN: llm-opt %s -tl-default-schedule="target=vulkan:1.3,subgroup=32" -tl-verify-parallel | FileCheck %s

// Decode's MLP: silu(gate) * up, an elementwise map of its inputs'
// elements, read only by the down product (a reduction of constant
// extents): computed where the product loads it, one launch less. The
// scale of a norm reads its row's reduction (r, every element the same
// value): left to its own launch.
// CHECK-LABEL: func.func @mlp
// CHECK-NOT: tl.block "silu_mul"
// CHECK: tl.block "down_rf_rf"
// CHECK: affine.load %arg0
// CHECK: math.exp
// CHECK: affine.load %arg1
// CHECK: affine.load %arg2
// CHECK: tl.block "scale"
// CHECK: tl.block "head"
// CHECK: return
func.func @mlp(%g: memref<1x256xf32>, %u: memref<1x256xf32>, %w: memref<32x256xf16>, %o: memref<1x32xf32>, %r: memref<1xf32>, %wh: memref<16x32xf16>, %oh: memref<1x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x256xf32>
  tl.for %i = %c0 to %c256 step %c1 {
    tl.block "silu_mul" (%vt = spatial %c0, %vi = spatial %i) reads(%g[%vt, %vi] : memref<1x256xf32>, %u[%vt, %vi] : memref<1x256xf32>) writes(%a[%vt, %vi] : memref<1x256xf32>) {
      %0 = affine.load %g[symbol(%vt), symbol(%vi)] : memref<1x256xf32>
      %1 = arith.negf %0 : f32
      %2 = math.exp %1 : f32
      %3 = arith.addf %2, %one : f32
      %4 = arith.divf %0, %3 : f32
      %5 = affine.load %u[symbol(%vt), symbol(%vi)] : memref<1x256xf32>
      %6 = arith.mulf %4, %5 : f32
      affine.store %6, %a[symbol(%vt), symbol(%vi)] : memref<1x256xf32>
    }
  }
  tl.for %n = %c0 to %c32 step %c1 {
    tl.for %k = %c0 to %c256 step %c1 {
      tl.block "down" (%vt = spatial %c0, %vn = spatial %n, %vk = reduce %k) reads(%a[%vt, %vk] : memref<1x256xf32>, %w[%vn, %vk] : memref<32x256xf16>, %o[%vt, %vn] : memref<1x32xf32>) writes(%o[%vt, %vn] : memref<1x32xf32>) init {
        affine.store %cst, %o[symbol(%vt), symbol(%vn)] : memref<1x32xf32>
      } {
        %0 = affine.load %a[symbol(%vt), symbol(%vk)] : memref<1x256xf32>
        %1 = affine.load %w[symbol(%vn), symbol(%vk)] : memref<32x256xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %o[symbol(%vt), symbol(%vn)] : memref<1x32xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %o[symbol(%vt), symbol(%vn)] : memref<1x32xf32>
      }
    }
  }
  %s = memref.alloc() {alignment = 64 : i64} : memref<1x32xf32>
  tl.for %i = %c0 to %c32 step %c1 {
    tl.block "scale" (%vt = spatial %c0, %vi = spatial %i) reads(%o[%vt, %vi] : memref<1x32xf32>, %r[0] : memref<1xf32>) writes(%s[%vt, %vi] : memref<1x32xf32>) {
      %0 = affine.load %o[symbol(%vt), symbol(%vi)] : memref<1x32xf32>
      %1 = affine.load %r[0] : memref<1xf32>
      %2 = arith.mulf %0, %1 : f32
      affine.store %2, %s[symbol(%vt), symbol(%vi)] : memref<1x32xf32>
    }
  }
  tl.for %n = %c0 to %c16 step %c1 {
    tl.for %k = %c0 to %c32 step %c1 {
      tl.block "head" (%vt = spatial %c0, %vn = spatial %n, %vk = reduce %k) reads(%s[%vt, %vk] : memref<1x32xf32>, %wh[%vn, %vk] : memref<16x32xf16>, %oh[%vt, %vn] : memref<1x16xf32>) writes(%oh[%vt, %vn] : memref<1x16xf32>) init {
        affine.store %cst, %oh[symbol(%vt), symbol(%vn)] : memref<1x16xf32>
      } {
        %0 = affine.load %s[symbol(%vt), symbol(%vk)] : memref<1x32xf32>
        %1 = affine.load %wh[symbol(%vn), symbol(%vk)] : memref<16x32xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = affine.load %oh[symbol(%vt), symbol(%vn)] : memref<1x16xf32>
        %4 = arith.mulf %0, %2 : f32
        %5 = arith.addf %3, %4 : f32
        affine.store %5, %oh[symbol(%vt), symbol(%vn)] : memref<1x16xf32>
      }
    }
  }
  return
}
