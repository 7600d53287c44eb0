// RUN: llm-opt %s -verify-diagnostics -tl-schedule='script={mma(matmul, 1)}'

// A band inside a loop over the reduction's chunks: its init would run at
// the first chunk only, where the band's sums start afresh at every one.
func.func @chunked(%a: memref<16x32xf16>, %b: memref<16x32xf16>, %y: memref<16x16xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  tl.for %kc = %c0 to %c2 step %c1 {
    // expected-error @+1 {{mma: a block with an init must reduce over the band's reduction loop alone, from 0}}
    tl.for %r = %c0 to %c16 step %c1 {
      tl.for %c = %c0 to %c16 step %c1 {
        tl.for %k = %c0 to %c16 step %c1 {
          %kk = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%kc, %k)
          tl.block "matmul" (%vr = spatial %r, %vc = spatial %c, %vk = reduce %kk) reads(%a[%vr, %vk] : memref<16x32xf16>, %b[%vc, %vk] : memref<16x32xf16>, %y[%vr, %vc] : memref<16x16xf32>) writes(%y[%vr, %vc] : memref<16x16xf32>) init {
            affine.store %cst, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          } {
            %0 = affine.load %a[symbol(%vr), symbol(%vk)] : memref<16x32xf16>
            %1 = affine.load %b[symbol(%vc), symbol(%vk)] : memref<16x32xf16>
            %2 = arith.extf %0 : f16 to f32
            %3 = arith.extf %1 : f16 to f32
            %4 = affine.load %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
            %5 = arith.mulf %2, %3 : f32
            %6 = arith.addf %4, %5 : f32
            affine.store %6, %y[symbol(%vr), symbol(%vc)] : memref<16x16xf32>
          }
        }
      }
    }
  }
  return
}
