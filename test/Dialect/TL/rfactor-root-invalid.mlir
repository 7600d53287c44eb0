// RUN: llm-opt %s -verify-diagnostics -tl-schedule='script={rfactor_at(mm, 1)}' -o /dev/null

// rfactor's root must be a loop of the reduction: loop 1 (over n) binds a
// spatial variable only.
func.func @mm(%x: memref<4x64xf32>, %w: memref<8x64xf32>, %y: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  tl.for %s = %c0 to %c4 step %c1 {
    tl.for %n = %c0 to %c8 step %c1 {
      tl.for %k = %c0 to %c64 step %c1 {
        // expected-error @+1 {{rfactor: the root loop must enclose tl.block 'mm' and bind a reduction variable of it}}
        tl.block "mm" (%vs = spatial %s, %vn = spatial %n, %vk = reduce %k)
            reads(%x[%vs, %vk] : memref<4x64xf32>, %w[%vn, %vk] : memref<8x64xf32>, %y[%vs, %vn] : memref<4x8xf32>)
            writes(%y[%vs, %vn] : memref<4x8xf32>) init {
          %z = arith.constant 0.0 : f32
          affine.store %z, %y[%vs, %vn] : memref<4x8xf32>
        } {
          %a = affine.load %x[%vs, %vk] : memref<4x64xf32>
          %b = affine.load %w[%vn, %vk] : memref<8x64xf32>
          %acc = affine.load %y[%vs, %vn] : memref<4x8xf32>
          %p = arith.mulf %a, %b : f32
          %r = arith.addf %acc, %p : f32
          affine.store %r, %y[%vs, %vn] : memref<4x8xf32>
        }
      }
    }
  }
  return
}
