// RUN: llm-opt %s -split-input-file -verify-diagnostics -tl-schedule='script={contract(r)}'

// Only `acc + x` updates contract.
func.func @max(%x: memref<64xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  tl.for %k = %c0 to %c64 step %c1 {
    // expected-error @+1 {{contract: the update of tl.block 'r' is not `acc = acc + x` of a floating-point accumulator}}
    tl.block "r" (%vk = reduce %k) reads(%x[%vk] : memref<64xf32>, %y[0] : memref<1xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %x[%vk] : memref<64xf32>
      %s = affine.load %y[0] : memref<1xf32>
      %r = arith.maxnumf %s, %a : f32
      affine.store %r, %y[0] : memref<1xf32>
    }
  }
  return
}

// -----

// The added value must be a product.
func.func @sum(%x: memref<64xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  tl.for %k = %c0 to %c64 step %c1 {
    // expected-error @+1 {{contract: the added value is not a product computed in the block}}
    tl.block "r" (%vk = reduce %k) reads(%x[%vk] : memref<64xf32>, %y[0] : memref<1xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %x[%vk] : memref<64xf32>
      %s = affine.load %y[0] : memref<1xf32>
      %r = arith.addf %s, %a : f32
      affine.store %r, %y[0] : memref<1xf32>
    }
  }
  return
}

// -----

// A product used elsewhere too stays rounded.
func.func @shared(%x: memref<64xf32>, %y: memref<1xf32>, %z: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  tl.for %k = %c0 to %c64 step %c1 {
    // expected-error @+1 {{contract: the product has another use besides the update}}
    tl.block "r" (%vk = reduce %k) reads(%x[%vk] : memref<64xf32>, %y[0] : memref<1xf32>)
        writes(%y[0] : memref<1xf32>) {
      %a = affine.load %x[%vk] : memref<64xf32>
      %s = affine.load %y[0] : memref<1xf32>
      %p = arith.mulf %a, %a : f32
      %r = arith.addf %s, %p : f32
      %q = arith.negf %p : f32
      affine.store %r, %y[0] : memref<1xf32>
    }
  }
  return
}
