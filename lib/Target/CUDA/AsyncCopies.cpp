//===- AsyncCopies.cpp - staged tiles copied with cp.async ----------------===//
//
// See the pass description (Passes.td). The NVGPU dialect's lowering joins
// convert-gpu-to-nvvm through its ConvertToLLVMPatternInterface (registered
// here), so that the copies are lowered with the kernels' 32-bit indices.
//
//===----------------------------------------------------------------------===//
#include "Target/CUDA/Passes.h"
#include "Target/TargetOption.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/DialectConversion.h"

namespace llmc::cuda {
#define GEN_PASS_DEF_CUDAASYNCCOPIES
#include "Target/CUDA/Passes.h.inc"
} // namespace llmc::cuda

using namespace mlir;

namespace {

bool inWorkgroupMemory(MemRefType type) {
  auto space =
      llvm::dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Workgroup;
}

bool inGlobalMemory(MemRefType type) {
  if (!type.getMemorySpace())
    return true;
  auto space = llvm::dyn_cast<gpu::AddressSpaceAttr>(type.getMemorySpace());
  return space && space.getValue() == gpu::AddressSpace::Global;
}

/// The load `store` copies from global into workgroup memory, where the
/// pair may be one cp.async: the load right before the store, its value
/// used by the store alone, 4 or 8 bytes (cp.async's smallest sizes).
memref::LoadOp asyncCopySource(memref::StoreOp store) {
  auto load = store.getValue().getDefiningOp<memref::LoadOp>();
  if (!load || load->getNextNode() != store.getOperation() ||
      !load->hasOneUse() || !inWorkgroupMemory(store.getMemRefType()) ||
      !inGlobalMemory(load.getMemRefType()) ||
      // (cp.async's operands: unit stride along the innermost dimension.)
      !store.getMemRefType().isLastDimUnitStride() ||
      !load.getMemRefType().isLastDimUnitStride())
    return {};
  Type element = store.getMemRefType().getElementType();
  if (!element.isIntOrFloat())
    return {};
  unsigned bits = element.getIntOrFloatBitWidth();
  return bits == 32 || bits == 64 ? load : memref::LoadOp();
}

/// Whether `op` holds nothing but async copies and operations free of
/// memory effects (the loops of a copy step and their index arithmetic).
bool onlyCopies(Operation *op) {
  return !op->walk([](Operation *inner) {
              if (isa<nvgpu::DeviceAsyncCopyOp>(inner) ||
                  inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
                  isMemoryEffectFree(inner))
                return WalkResult::advance();
              return WalkResult::interrupt();
            }).wasInterrupted();
}

struct CUDAAsyncCopiesPass
    : llmc::cuda::impl::CUDAAsyncCopiesBase<CUDAAsyncCopiesPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc =
        llmc::parseTargetOption(getOperation(), "cuda-async-copies", target);
    if (failed(desc))
      return signalPassFailure();
    if (!desc->hasAsyncCopy())
      return;
    llvm::SmallVector<memref::StoreOp> stores;
    getOperation().walk([&](memref::StoreOp store) {
      if (asyncCopySource(store))
        stores.push_back(store);
    });
    llvm::SmallVector<Operation *> copies;
    for (memref::StoreOp store : stores) {
      memref::LoadOp load = asyncCopySource(store);
      OpBuilder b(store);
      auto copy = nvgpu::DeviceAsyncCopyOp::create(
          b, store.getLoc(), nvgpu::DeviceAsyncTokenType::get(b.getContext()),
          store.getMemRef(), store.getIndices(), load.getMemRef(),
          load.getIndices(), b.getIndexAttr(1), /*srcElements=*/Value(),
          /*bypassL1=*/UnitAttr());
      store.erase();
      load.erase();
      copies.push_back(copy);
    }
    // The copies of consecutive steps (the outermost loops or guards around
    // a copy that hold nothing but copies) one group, committed and waited
    // for right after the last: a thread's copies in flight together.
    llvm::SetVector<Operation *> steps;
    for (Operation *copy : copies) {
      Operation *step = copy;
      while (Operation *parent = step->getParentOp()) {
        if (!isa<scf::ForOp, scf::IfOp>(parent) || !onlyCopies(parent))
          break;
        step = parent;
      }
      steps.insert(step);
    }
    llvm::SetVector<Block *> blocks;
    for (Operation *step : steps)
      blocks.insert(step->getBlock());
    for (Block *block : blocks) {
      Operation *last = nullptr;
      auto endGroup = [&] {
        OpBuilder b(last->getContext());
        b.setInsertionPointAfter(last);
        NVVM::CpAsyncCommitGroupOp::create(b, last->getLoc());
        NVVM::CpAsyncWaitGroupOp::create(b, last->getLoc(), 0);
        last = nullptr;
      };
      for (Operation &op : llvm::make_early_inc_range(*block)) {
        if (steps.contains(&op))
          last = &op;
        else if (last && !(op.getNumRegions() == 0 && isMemoryEffectFree(&op)))
          endGroup();
      }
      if (last)
        endGroup();
    }
  }
};

/// NVGPU's lowering to NVVM as part of any conversion to LLVM (here
/// convert-gpu-to-nvvm's), with that conversion's type converter: its
/// index width.
struct NVGPUToLLVMInterface : public ConvertToLLVMPatternInterface {
  using ConvertToLLVMPatternInterface::ConvertToLLVMPatternInterface;
  void loadDependentDialects(MLIRContext *context) const final {
    context->loadDialect<NVVM::NVVMDialect>();
  }
  void populateConvertToLLVMConversionPatterns(
      ConversionTarget &target, LLVMTypeConverter &converter,
      RewritePatternSet &patterns) const final {
    // An async copy's token (the copies wait by group, not by token).
    converter.addConversion([&converter](nvgpu::DeviceAsyncTokenType type) {
      return converter.convertType(IntegerType::get(type.getContext(), 32));
    });
    target.addIllegalDialect<nvgpu::NVGPUDialect>();
    populateNVGPUToNVVMConversionPatterns(converter, patterns);
  }
};

} // namespace

void llmc::cuda::registerConvertNVGPUToLLVMInterface(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *, nvgpu::NVGPUDialect *dialect) {
    dialect->addInterfaces<NVGPUToLLVMInterface>();
  });
}
