// RUN: not llm-opt %s -tl-schedule='script={fuse_launches(a, b)}' 2>&1 | FileCheck %s

// The script takes each named block's top-level nest; a block outside any
// loop has none.
// CHECK: tl-schedule: fuse_launches: tl.block 'b' is in no loop nest
func.func @bare(%x: memref<8xf32>, %y: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  tl.for %t = %c0 to %c8 step %c1 kind(thread_bound) thread("threadIdx.x") {
    tl.block "a" (%vt = spatial %t) reads() writes(%x[%vt] : memref<8xf32>) {
      %f = arith.constant 1.0 : f32
      affine.store %f, %x[symbol(%vt)] : memref<8xf32>
    }
  }
  tl.block "b" () reads() writes(%y[0] : memref<1xf32>) {
    %f = arith.constant 1.0 : f32
    affine.store %f, %y[0] : memref<1xf32>
  }
  return
}
