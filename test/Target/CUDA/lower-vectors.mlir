// RUN: llm-opt %s -pass-pipeline='builtin.module(gpu.module(cuda-lower-vectors))' | FileCheck %s

// A lane's group reduction (the vectorizer's shape cast and multi-reduction
// of 8 lanes into 1) as one vector.reduction, which the NVVM lowering
// takes; the 16-byte load keeps its alignment.
// CHECK-LABEL: gpu.func @group
// CHECK: vector.load %{{.*}} {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// CHECK-NOT: vector.multi_reduction
// CHECK-NOT: vector.shape_cast
// CHECK: vector.reduction <add>, %{{.*}}, %{{.*}} : vector<8xf32> into f32
gpu.module @k {
  gpu.func @group(%w: memref<?xf16>, %acc: f32, %out: memref<?xf32>) kernel {
    %c0 = arith.constant 0 : index
    %v = vector.load %w[%c0] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
    %e = arith.extf %v : vector<8xf16> to vector<8xf32>
    %g = vector.shape_cast %e : vector<8xf32> to vector<1x8xf32>
    %a = vector.broadcast %acc : f32 to vector<1xf32>
    %r = vector.multi_reduction <add>, %g, %a [1] : vector<1x8xf32> to vector<1xf32>
    vector.store %r, %out[%c0] : memref<?xf32>, vector<1xf32>
    gpu.return
  }
}
