//===- Passes.td - passes of the Vulkan back end -----------*- tablegen -*-===//
#ifndef LLMC_TARGET_VULKAN_PASSES_TD
#define LLMC_TARGET_VULKAN_PASSES_TD

include "mlir/Pass/PassBase.td"

def VulkanKernelABI : Pass<"vulkan-kernel-abi", "mlir::ModuleOp"> {
  let summary = "Write the dispatch program and give the kernels Vulkan's ABI";
  let description = [{
    Input: `convert-tl-to-gpu`'s output (the kernels in `gpu.module
    @llmc_kernels`, launched from the phase functions `llmc.phase` =
    prefill / decode, whose arguments are the entry's, llmc/abi.h).

    The module attribute `llmc.dispatch` (JSON, docs/artifact.md "device")
    lists the kernels (name, workgroup size) and per phase the launches in
    order: the kernel, the grid, and per argument either a buffer binding
    (`tokens`, `weights`, `kv`, `logits` or `arena`, at a byte offset, so
    many bytes) or a scalar. Offsets, sizes, grids and scalars are
    expressions of the call's sizes (`tokens`, `pos0`, `n_out`, and
    `["token", i]`, a token id), traced through `memref.view`,
    `memref.subview`, `memref.cast`, `memref.dim` and index arithmetic; any
    other host op that a launch depends on is an error located at it.

    Each kernel's memref arguments become `memref<?xT>` (the binding
    carries the offset), each followed by index arguments for its dynamic
    sizes (scalars of the program, in the same order); loads, stores and
    `memref.dim` are linearized with the old type's strides. Stack buffers
    move to the Function storage class, `known_block_size` becomes
    `spirv.entry_point_abi`. The launches are dropped from the host. A
    buffer of a static shape past the target's `range` (a weight matrix
    larger than one binding may span) is bound in windows of the range
    rounded down to 256 bytes: a kernel argument and a binding per window,
    each load choosing the window its element lies in (a kernel that writes
    such a buffer is an error); a binding of a constant size past the range
    otherwise is an error; scalars must be index or i32.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"vulkan\"",
           "the target description (explicit: resolved by the driver)">
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect",
                           "mlir::spirv::SPIRVDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

#endif // LLMC_TARGET_VULKAN_PASSES_TD
