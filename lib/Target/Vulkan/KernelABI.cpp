//===- KernelABI.cpp - the dispatch program and the kernels' Vulkan ABI ---===//
//
// A Vulkan artifact has no host code: the runtime records each phase's
// launches into command buffers from a dispatch program, a list per phase
// (prefill, decode) of kernel launches whose grid, buffer bindings and
// scalar arguments are expressions of the call's sizes (docs/artifact.md,
// "device"). This pass writes that program (Target/GPU/KernelABI.h, shared
// with the CUDA back end) and gives the kernels the ABI it describes:
// - a memref argument becomes a one-dimensional `memref<?xT>` bound at its
//   byte offset (a storage buffer binding carries the offset and no
//   shape), followed by one index argument per dynamic size; the kernel's
//   accesses are linearized with the strides of the old type;
// - scalars stay (the runtime writes them into a buffer each call);
// - each buffer binding says whether the kernel writes it ("writes"), so
//   that the runtime puts a barrier only between launches whose bindings
//   overlap where one of them writes;
// - stack buffers live in the Function storage class; the workgroup size
//   becomes the entry point's (`spirv.entry_point_abi`).
// The launches are then dropped from the host functions, which keep their
// attributes (the arena plans) for the artifact writer.
//
//===----------------------------------------------------------------------===//
#include "Target/GPU/KernelABI.h"
#include "Target/TargetOption.h"
#include "Target/Vulkan/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVAttributes.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"

namespace llmc::vulkan {
#define GEN_PASS_DEF_VULKANKERNELABI
#include "Target/Vulkan/Passes.h.inc"
} // namespace llmc::vulkan

using namespace mlir;
using namespace llmc;

namespace {

/// Vulkan's retyping of a kernel the shared ABI rewrote: workgroup memory
/// and stack buffers in their storage classes, no no-wrap flags, the
/// workgroup size as the entry point's (`spirv.entry_point_abi`).
LogicalResult retypeForVulkan(gpu::GPUFuncOp kernel) {
  MLIRContext *ctx = kernel.getContext();
  OpBuilder b(ctx);
  Block &entry = kernel.getBody().front();
  unsigned inputs = kernel.getNumArguments();
  unsigned attributions = kernel.getNumWorkgroupAttributions();
  auto functionStorage =
      spirv::StorageClassAttr::get(ctx, spirv::StorageClass::Function);
  // The workgroup's memory (attributions, after the inputs) becomes
  // buffers of the Workgroup storage class, which the SPIR-V conversion
  // makes module variables of.
  auto workgroupStorage =
      spirv::StorageClassAttr::get(ctx, spirv::StorageClass::Workgroup);
  b.setInsertionPointToStart(&entry);
  for (unsigned i = 0; i < attributions; ++i) {
    BlockArgument old = entry.getArgument(inputs);
    auto t = cast<MemRefType>(old.getType());
    auto shared = MemRefType::get(t.getShape(), t.getElementType(),
                                  t.getLayout(), workgroupStorage);
    for (Operation *user : old.getUsers())
      if (!isa<memref::LoadOp, memref::StoreOp>(user))
        return user->emitOpError("uses a workgroup buffer in a way the "
                                 "Vulkan ABI cannot retype");
    old.replaceAllUsesWith(
        memref::AllocOp::create(b, old.getLoc(), shared).getResult());
    entry.eraseArgument(inputs);
  }
  kernel->setAttr(gpu::GPUFuncOp::getNumWorkgroupAttributionsAttrName(),
                  b.getI64IntegerAttr(0));
  // Stack buffers: the Function storage class.
  WalkResult r = kernel.walk([&](memref::AllocaOp a) {
    MemRefType t = a.getType();
    if (t.getMemorySpace())
      return WalkResult::advance();
    auto nt = MemRefType::get(t.getShape(), t.getElementType(), t.getLayout(),
                              functionStorage);
    a.getResult().setType(nt);
    for (Operation *user : a->getUsers())
      if (!isa<memref::LoadOp, memref::StoreOp>(user)) {
        user->emitOpError("uses a stack buffer in a way the Vulkan ABI "
                          "cannot retype");
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  if (r.wasInterrupted())
    return failure();
  // No-wrap flags would become decorations that need an extension the
  // target may lack; they only license optimizations.
  kernel.walk([&](arith::ArithIntegerOverflowFlagsInterface op) {
    op->setAttr(op.getIntegerOverflowAttrName(),
                arith::IntegerOverflowFlagsAttr::get(
                    ctx, arith::IntegerOverflowFlags::none));
  });
  DenseI32ArrayAttr block = kernel.getKnownBlockSizeAttr();
  SmallVector<int32_t> size = block ? SmallVector<int32_t>(block.asArrayRef())
                                    : SmallVector<int32_t>{1, 1, 1};
  kernel->setAttr(spirv::getEntryPointABIAttrName(),
                  spirv::getEntryPointABIAttr(ctx, size));
  return success();
}
struct VulkanKernelABIPass
    : llmc::vulkan::impl::VulkanKernelABIBase<VulkanKernelABIPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto desc = parseTargetOption(module, "vulkan-kernel-abi", target);
    if (failed(desc))
      return signalPassFailure();
    auto retype = [&](gpu::GPUFuncOp k) {
      return success(succeeded(retypeForVulkan(k)) &&
                     succeeded(gpu_abi::checkKernelTypes(k, *desc)));
    };
    if (failed(gpu_abi::writeDispatchProgram(module, *desc, "vulkan-kernel-abi",
                                             retype)))
      signalPassFailure();
  }
};

} // namespace
