//===- VulkanBackend.cpp - the Vulkan (SPIR-V) back end -------------------===//
//
// Lowers the GPU-scheduled tl nests to kernels of the gpu dialect, writes
// the dispatch program the runtime records into command buffers, and
// converts the kernels to one SPIR-V module (an entry point per kernel),
// serialized into the artifact as kernels.spv.
//
//===----------------------------------------------------------------------===//
#include "Target/Vulkan/VulkanBackend.h"
#include "Target/GPU/GPUBackend.h"

#include "Target/Vulkan/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToSPIRV/GPUToSPIRVPass.h"
#include "mlir/Conversion/MathToSPIRV/MathToSPIRVPass.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/IR/SPIRVOps.h"
#include "mlir/Dialect/SPIRV/IR/TargetAndABI.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Target/SPIRV/Serialization.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace llmc;

spirv::TargetEnvAttr llmc::vulkanTargetEnv(MLIRContext *ctx,
                                           const TargetDescription &target) {
  using spirv::Capability;
  using spirv::Extension;
  // The newest SPIR-V each Vulkan version consumes.
  spirv::Version version =
      target.name == "1.3" ? spirv::Version::V_1_6 : spirv::Version::V_1_5;
  SmallVector<Capability> caps = {Capability::Shader,
                                  Capability::GroupNonUniform,
                                  Capability::GroupNonUniformArithmetic,
                                  Capability::GroupNonUniformShuffle};
  SmallVector<Extension> exts = {
      Extension::SPV_KHR_storage_buffer_storage_class};
  if (target.hasGPUInt8()) {
    caps.append({Capability::Int8, Capability::StorageBuffer8BitAccess});
    exts.push_back(Extension::SPV_KHR_8bit_storage);
  }
  if (target.hasGPUFloat16()) {
    caps.append({Capability::Float16, Capability::Int16,
                 Capability::StorageBuffer16BitAccess});
    exts.push_back(Extension::SPV_KHR_16bit_storage);
  }
  if (target.hasGPUFloat64())
    caps.push_back(Capability::Float64);
  if (target.hasGPUInt64())
    caps.push_back(Capability::Int64);
  Builder b(ctx);
  int wg = target.maxWorkgroupSize;
  auto limits = spirv::ResourceLimitsAttr::get(
      ctx, target.sharedMemory, wg, b.getI32ArrayAttr({wg, wg, 64}),
      target.subgroupSize, std::nullopt, std::nullopt, b.getArrayAttr({}),
      b.getArrayAttr({}));
  return spirv::TargetEnvAttr::get(
      spirv::VerCapExtAttr::get(version, caps, exts, ctx), limits,
      spirv::ClientAPI::Vulkan);
}

namespace {

/// Puts the target's SPIR-V environment on the kernels' module.
struct AttachTargetEnv : PassWrapper<AttachTargetEnv, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AttachTargetEnv)
  explicit AttachTargetEnv(TargetDescription target)
      : target(std::move(target)) {}
  StringRef getArgument() const override { return "llmc-attach-spirv-env"; }
  void runOnOperation() override {
    getOperation().walk([&](gpu::GPUModuleOp m) {
      m->setAttr(spirv::getTargetEnvAttrName(),
                 vulkanTargetEnv(&getContext(), target));
    });
  }
  TargetDescription target;
};

/// Raises each SPIR-V module's version (spirv-update-vce deduces the
/// least its ops need) to the target's: the ABI lowering lists every
/// global an entry point uses in its interface, as SPIR-V 1.4 on requires
/// and earlier versions forbid.
struct RaiseSPIRVVersion
    : PassWrapper<RaiseSPIRVVersion, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RaiseSPIRVVersion)
  explicit RaiseSPIRVVersion(TargetDescription target)
      : target(std::move(target)) {}
  StringRef getArgument() const override { return "llmc-raise-spirv-version"; }
  void runOnOperation() override {
    spirv::TargetEnvAttr env = vulkanTargetEnv(&getContext(), target);
    getOperation().walk([&](spirv::ModuleOp m) {
      std::optional<spirv::VerCapExtAttr> vce = m.getVceTriple();
      if (!vce || vce->getVersion() >= env.getVersion())
        return;
      m.setVceTripleAttr(spirv::VerCapExtAttr::get(
          env.getVersion(), llvm::to_vector(vce->getCapabilities()),
          llvm::to_vector(vce->getExtensions()), &getContext()));
    });
  }
  TargetDescription target;
};

class VulkanBackend : public GPUBackend {
public:
  using GPUBackend::GPUBackend;
  llvm::StringRef name() const override { return "vulkan"; }
  void buildLowering(OpPassManager &pm,
                     const LoweringOptions &options) const override {
    buildVulkanLowering(pm, target(), options);
  }
  llvm::Expected<std::string> emit(ModuleOp lowered,
                                   llvm::StringRef dir) const override;
};

} // namespace

void llmc::buildVulkanLowering(OpPassManager &pm,
                               const TargetDescription &target,
                               const LoweringOptions &options) {
  buildGPUKernels(pm);
  vulkan::VulkanKernelABIOptions abi;
  abi.target = target.str();
  pm.addPass(vulkan::createVulkanKernelABI(abi));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(std::make_unique<AttachTargetEnv>(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(memref::createFoldMemRefAliasOpsPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createConvertMathToSPIRVPass());
  pm.addPass(createConvertGPUToSPIRVPass(/*mapMemorySpace=*/true));
  OpPassManager &spv = pm.nest<spirv::ModuleOp>();
  spv.addPass(spirv::createSPIRVLowerABIAttributesPass());
  spv.addPass(spirv::createSPIRVUpdateVCEPass());
  pm.addPass(std::make_unique<RaiseSPIRVVersion>(target));
}

std::unique_ptr<TargetBackend>
llmc::createVulkanBackend(const TargetDescription &target) {
  return std::make_unique<VulkanBackend>(target);
}

llvm::Expected<std::string> VulkanBackend::emit(ModuleOp lowered,
                                                llvm::StringRef dir) const {
  SmallVector<spirv::ModuleOp> modules(lowered.getOps<spirv::ModuleOp>());
  if (modules.size() != 1)
    return llvm::createStringError(
        "the lowered module holds " + std::to_string(modules.size()) +
        " SPIR-V modules (expected the kernels' one)");
  SmallVector<uint32_t> words;
  if (failed(spirv::serialize(modules[0], words)))
    return llvm::createStringError("cannot serialize the SPIR-V kernels");
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "kernels.spv");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return llvm::createStringError(path.str().str() +
                                   ": cannot write: " + ec.message());
  os.write(reinterpret_cast<const char *>(words.data()),
           words.size() * sizeof(uint32_t));
  return std::string("kernels.spv");
}
