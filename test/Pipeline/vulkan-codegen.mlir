// RUN: llm-opt %s --compile-to=llvm --llmc-target=vulkan:1.3,subgroup=8,workgroup=1024 | FileCheck %s
// RUN: llm-opt %s --compile-to=llvm --llmc-target=vulkan:1.3,subgroup=8,workgroup=1024 | FileCheck %s --check-prefix=SG

// A Vulkan compile: the GPU schedule's grid, one SPIR-V module for the
// target's environment (Vulkan 1.3: SPIR-V 1.6) with an entry point per
// kernel and its workgroup size, every argument a storage buffer binding of
// set 0; the host functions keep no launch, the dispatch program has them.
// CHECK: llmc.dispatch = "{\22kernels\22:[{\22name\22:\22forward_prefill.embedding\22
// CHECK-SAME: \22phases\22:{\22decode\22:[{
// CHECK-SAME: \22prefill\22:[{
// CHECK-NOT: gpu.launch_func
// CHECK: spirv.module @__spv__llmc_kernels Logical GLSL450 requires #spirv.vce<v1.6
// CHECK: spirv.GlobalVariable @forward_prefill.embedding_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(i32 [0])>, StorageBuffer>
// CHECK: spirv.EntryPoint "GLCompute" @forward_prefill.embedding
// CHECK: spirv.ExecutionMode @forward_prefill.embedding "LocalSize", 64, 1, 1
// CHECK: spirv.EntryPoint "GLCompute" @forward_prefill.matmul
// CHECK: spirv.EntryPoint "GLCompute" @forward_decode.matmul
// The decode matmul shares each output's 256 products among a workgroup:
// its partials in a Workgroup variable, a barrier between steps, each
// subgroup of 8 summed by a non-uniform group operation.
// SG: spirv.GlobalVariable @__workgroup_mem__{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32>)>, Workgroup>
// SG: spirv.func @forward_decode.matmul()
// SG: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// SG: spirv.GroupNonUniformFAdd <Subgroup> <Reduce>
!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 64, element_type = f32>
func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x64xf32> {
  %emb = graph.param %w["emb"] : tensor<64x256xf32>
  %x = graph.embedding %emb[%tokens] : tensor<64x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
  %wq = graph.param %w["wq"] : tensor<64x256xf32>
  %y = graph.matmul %x, %wq : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
