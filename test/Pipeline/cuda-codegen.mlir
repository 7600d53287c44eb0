// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_90 | FileCheck %s
// RUN: llm-opt %s --compile-to=llvm --llmc-target=cuda:sm_80 | FileCheck %s --check-prefix=SM80

// A CUDA compile: the GPU schedule's kernels, the dispatch program (their
// names PTX identifiers), and one gpu.binary of PTX for the target's SM in
// the oldest PTX ISA that knows it: an entry per kernel with its block size,
// the products fused into their sums (fma.rn), the decode matmul's lanes
// reading 4 floats at a time (16-byte loads, 4 rows a workgroup), its
// subgroup sum as five butterfly shuffles, its partials in shared memory;
// the prompt's product (the logit rows: not on the tensor cores) stages its
// tiles of activations in shared memory with cp.async, one group a step,
// waited for before the barrier.
// CHECK: llmc.dispatch = "{\22kernels\22:[{\22name\22:\22forward_prefill_embedding\22
// CHECK-SAME: \22phases\22:{\22decode\22:[{
// CHECK-NOT: gpu.launch_func
// CHECK-NOT: gpu.module
// CHECK: gpu.binary @llmc_kernels [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// CHECK-SAME: .version 8.0\0A.target sm_90
// CHECK-SAME: .visible .entry forward_prefill_embedding(
// CHECK-SAME: .maxntid 64, 1, 1
// CHECK-SAME: .visible .entry forward_prefill_matmul(
// CHECK-SAME: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4;
// CHECK-SAME: cp.async.commit_group;
// CHECK-SAME: cp.async.wait_group {{(\\09)?}}0;
// CHECK-SAME: bar.sync {{(\\09)?}}0;
// CHECK-SAME: fma.rn.f32
// CHECK-SAME: .visible .entry forward_decode_matmul(
// CHECK-SAME: .shared .align 4 .b8 __wg_forward_decode_matmul_0[1024]
// CHECK-SAME: ld.global.v4.b32
// CHECK-SAME: shfl.sync.bfly.b32 {{.*}}shfl.sync.bfly.b32 {{.*}}shfl.sync.bfly.b32 {{.*}}shfl.sync.bfly.b32 {{.*}}shfl.sync.bfly.b32
// SM80: #nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">
// SM80-SAME: .version 7.0\0A.target sm_80
// SM80-SAME: cp.async.ca.shared.global
!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 64, element_type = f32>
func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x64xf32> {
  %emb = graph.param %w["emb"] : tensor<64x256xf32>
  %x = graph.embedding %emb[%tokens] : tensor<64x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
  %wq = graph.param %w["wq"] : tensor<64x256xf32>
  %y = graph.matmul %x, %wq : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
