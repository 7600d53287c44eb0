//===- Pipelines.cpp - llmc's compilation pipeline ------------------------===//
#include "Transforms/Pipelines.h"

#include "Conversion/Passes.h"
#include "Dialect/Dist/IR/Dist.h"
#include "Dialect/Dist/Transforms/Passes.h"
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Target/CPU/Passes.h"
#include "Target/CUDA/Passes.h"
#include "Target/TargetBackend.h"
#include "Target/Vulkan/Passes.h"
#include "llmc/abi.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace llmc;

std::optional<Phase> llmc::parsePhase(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("graph", Phase::Graph)
      .Case("tl", Phase::TL)
      .Case("llvm", Phase::LLVM)
      .Default(std::nullopt);
}

/// A pass that fails with `message`: how a pipeline whose options do not
/// hold reports it when it runs.
static std::unique_ptr<Pass> createErrorPass(std::string message) {
  return createScheduleSlotPass([message](ModuleOp m) {
    return m.emitError(message), failure();
  });
}

bool llmc::isKVCacheType(llvm::StringRef name) {
  return llvm::is_contained({LLMC_KV_CACHE_DTYPES}, name);
}

void llmc::buildGraphPhase(OpPassManager &pm, const PipelineOptions &options) {
  if (options.target.isGPU() && options.actQuant != "exact") {
    // llama.cpp's numerics are its CPU back end's; a GPU runs the exact
    // mode (the two-pass attention would share one scores row between the
    // rows a GPU runs at once).
    pm.addPass(createErrorPass("--act-quant " + options.actQuant +
                               " is for CPU targets; a GPU target compiles "
                               "the exact mode"));
    return;
  }
  // The entry returns the rows its caller reads (llmc/abi.h's n_out).
  pm.addPass(graph::createGraphOutputRows());
  if (options.kvCache != "f32") {
    graph::GraphKVCacheTypeOptions kv;
    kv.elementType = options.kvCache;
    pm.addPass(graph::createGraphKVCacheType(kv));
  }
  // A sharded model: the plan (or the given annotations), every value's
  // layout, and the per-rank program, before the rewrites that depend on
  // the local shapes (the KV heads a rank holds).
  if (options.distribute) {
    if (options.target.isGPU()) {
      pm.addPass(createErrorPass(
          "--mesh: sharded models run on CPU targets (MPI) in this version; "
          "a GPU target compiles one device"));
      return;
    }
    const dist::PlanOptions &plan = *options.distribute;
    dist::DistPlanOptions o;
    o.mesh = plan.mesh;
    o.bandwidth = plan.bandwidth;
    o.latency = plan.latency;
    o.memoryBandwidth = plan.memoryBandwidth;
    o.memory = plan.memory;
    o.flops = plan.flops;
    o.microBatch = plan.microBatch;
    o.roles = plan.roles;
    pm.addPass(dist::createDistPlan(o));
    dist::DistStageOptions stage;
    stage.stage = options.stage;
    pm.addPass(dist::createDistStage(stage));
    pm.addPass(dist::createDistPropagate());
    pm.addPass(dist::createDistPartition());
  }
  // The numeric mode's attributes (exact: the KV view padded for whole
  // lanes and flash attention, nothing else).
  graph::GraphActQuantOptions act;
  act.mode = options.actQuant;
  pm.addPass(graph::createGraphActQuant(act));
  // Decode's flash attention over the positions where the KV heads cannot
  // fill the cores.
  graph::GraphSplitKVOptions split;
  split.target = options.target.str();
  pm.addPass(graph::createGraphSplitKV(split));
  // A CPU's flash attention: the values stored by position.
  graph::GraphKVLayoutOptions kvLayout;
  kvLayout.target = options.target.str();
  pm.addPass(graph::createGraphKVLayout(kvLayout));
  // A GPU's flash attention: a scores tile per row, the rows independent.
  graph::GraphRowTilesOptions rowTiles;
  rowTiles.target = options.target.str();
  pm.addPass(graph::createGraphRowTiles(rowTiles));
  // A CPU's flash attention: tiles of query rows that share each load.
  graph::GraphQueryTilesOptions queryTiles;
  queryTiles.target = options.target.str();
  pm.addPass(graph::createGraphQueryTiles(queryTiles));
  // Weight pre-packing for the products' lanes: the integer products'
  // (llama.cpp mode), or the f32 products' outputs (exact mode).
  graph::GraphInterleaveWeightsOptions interleave;
  interleave.target = options.target.str();
  interleave.floats = options.actQuant == "exact";
  pm.addPass(graph::createGraphInterleaveWeights(interleave));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Qwen3's q/k norms into their RoPE.
  pm.addPass(graph::createGraphFuseRopeNorm());
  // After graph-output-rows, which moves row slices through single ops.
  pm.addPass(graph::createGraphFuseElementwise());
  pm.addPass(graph::createGraphLayoutWeights());
}

void llmc::buildTLPhase(OpPassManager &pm, const PipelineOptions &options) {
  pm.addPass(createConvertGraphToTL());
  // Entry points write their results into caller-provided buffers; when a
  // result is a fresh allocation, the allocation itself becomes the out
  // parameter (no copy).
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.modifyPublicFunctions = true;
  outParams.hoistStaticAllocs = true;
  outParams.hoistDynamicAllocs = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass());
  // Nests that compute what an earlier one did (the activations several
  // matmuls quantize alike, the layers' RoPE angles) go; CSE first makes
  // the values they use from outside (sizes, constants) one.
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(tl::createTLCSENests());
  // Decode (one token) and prefill get their own code: the decode version's
  // token loops fold away, its buffers become static.
  pm.addPass(tl::createTLSpecializeDecode());
  pm.addPass(createCanonicalizerPass());
  // Elementwise blocks computed where their input is produced (the residual
  // adds and silu·mul after the quantized products' output blocks).
  pm.addNestedPass<func::FuncOp>(tl::createTLInlineEpilogues());
  // Cheap elementwise blocks computed where they are read (the norm's
  // scale in the blocks quantizing the matmuls' activations).
  pm.addNestedPass<func::FuncOp>(tl::createTLInlinePrologues());
  // The schedule: the target's default, or the one given (Python, C++) at
  // the schedule slot, which starts from the canonical nests.
  if (options.schedule) {
    pm.addPass(createScheduleSlotPass(options.schedule));
  } else if (options.defaultSchedule) {
    tl::TLDefaultScheduleOptions schedule;
    schedule.target = options.target.str();
    schedule.tuning = options.tuning.str();
    pm.addPass(tl::createTLDefaultSchedule(schedule));
  }
  pm.addPass(createCanonicalizerPass());
  // The phase boundary: whatever scheduled the loops, a kind that would
  // race stops here.
  pm.addPass(tl::createTLVerifyParallel());
}

void llmc::buildTargetPhase(OpPassManager &pm, const PipelineOptions &options) {
  auto backend = createTargetBackend(options.target);
  if (!backend) {
    // Reported when the pipeline runs, located at the module.
    pm.addPass(createErrorPass(llvm::toString(backend.takeError())));
    return;
  }
  LoweringOptions lowering;
  lowering.profile = options.profile;
  (*backend)->buildLowering(pm, lowering);
}

void llmc::buildCompilePipeline(OpPassManager &pm,
                                const PipelineOptions &options, Phase last,
                                Phase first) {
  if (first <= Phase::Graph)
    buildGraphPhase(pm, options);
  if (last == Phase::Graph)
    return;
  if (first <= Phase::TL)
    buildTLPhase(pm, options);
  if (last == Phase::TL)
    return;
  buildTargetPhase(pm, options);
}

//===----------------------------------------------------------------------===//
// The schedule slot
//===----------------------------------------------------------------------===//

namespace {
struct ScheduleSlotPass
    : PassWrapper<ScheduleSlotPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ScheduleSlotPass)
  ScheduleSlotPass() = default;
  explicit ScheduleSlotPass(ScheduleCallback callback)
      : callback(std::move(callback)) {}
  StringRef getArgument() const override { return "llmc-schedule-slot"; }
  StringRef getDescription() const override {
    return "Where a schedule given to the pipeline builder (Python, C++) "
           "rewrites the tl loop nests; nothing without one";
  }
  void runOnOperation() override {
    if (callback && failed(callback(getOperation())))
      signalPassFailure();
  }
  ScheduleCallback callback;
};
} // namespace

std::unique_ptr<Pass> llmc::createScheduleSlotPass(ScheduleCallback callback) {
  return std::make_unique<ScheduleSlotPass>(std::move(callback));
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void llmc::registerLLMCDialects(DialectRegistry &registry) {
  registry
      .insert<graph::GraphDialect, tl::TLDialect, func::FuncDialect,
              arith::ArithDialect, math::MathDialect, memref::MemRefDialect,
              affine::AffineDialect, scf::SCFDialect, cf::ControlFlowDialect,
              LLVM::LLVMDialect, omp::OpenMPDialect, vector::VectorDialect,
              gpu::GPUDialect, spirv::SPIRVDialect, NVVM::NVVMDialect,
              nvgpu::NVGPUDialect, dist::DistDialect, tensor::TensorDialect>();
  // convert-to-llvm finds each dialect's patterns through these interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertOpenMPToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  cuda::registerConvertNVGPUToLLVMInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
  // The CUDA back end: `#nvvm.target` serializes kernels to PTX.
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
}

namespace {
/// The options of the registered pipelines: the top of the pipeline.
template <typename Derived>
struct TopOptions : public PassPipelineOptions<Derived> {
  mlir::detail::PassOptions::Option<std::string> target{
      *this, "target",
      llvm::cl::desc("the target description (cpu = this host, "
                     "cpu:znver4, cpu:x86-64-v3,+avx512f, ...)"),
      llvm::cl::init("cpu")};
  mlir::detail::PassOptions::Option<std::string> actQuant{
      *this, "act-quant", llvm::cl::desc("numeric mode: exact or llama.cpp"),
      llvm::cl::init("exact")};
  mlir::detail::PassOptions::Option<std::string> kvCache{
      *this, "kv-cache",
      llvm::cl::desc("the KV cache's element type: f32 or f16"),
      llvm::cl::init("f32")};
  mlir::detail::PassOptions::Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("default (the target's) or none (canonical nests)"),
      llvm::cl::init("default")};
  mlir::detail::PassOptions::Option<std::string> mesh{
      *this, "mesh",
      llvm::cl::desc("shard over a mesh of this shape (2, 4, 2x2; "
                     "dist-plan's defaults for the links); empty: one "
                     "process"),
      llvm::cl::init("")};
  mlir::detail::PassOptions::Option<bool> profile{
      *this, "profile",
      llvm::cl::desc("time every kernel call (cpu-profile-kernels)"),
      llvm::cl::init(false)};
  mlir::detail::PassOptions::Option<std::string> tuning{
      *this, "tuning",
      llvm::cl::desc("measured schedule choices: key=r<R>c<C>;... "
                     "(Target/Tuning.h)"),
      llvm::cl::init("")};
};

struct PhaseOptions : TopOptions<PhaseOptions> {};

struct CompileOptions : TopOptions<CompileOptions> {
  Option<std::string> to{*this, "to",
                         llvm::cl::desc("last phase: graph, tl or llvm"),
                         llvm::cl::init("llvm")};
};

/// Resolves the pipeline options (the target string once: `cpu` describes
/// this host) and builds phases `first`..`last`; options that do not hold
/// become a pass that reports them.
void buildRegistered(OpPassManager &pm, llvm::StringRef name,
                     const std::string &target, const std::string &actQuant,
                     const std::string &kvCache, const std::string &schedule,
                     bool profile, const std::string &tuning,
                     const std::string &mesh, Phase first, Phase last) {
  if (actQuant != "exact" && actQuant != "llama.cpp")
    return pm.addPass(createErrorPass(name.str() +
                                      ": act-quant: expected exact or "
                                      "llama.cpp, got '" +
                                      actQuant + "'"));
  if (!isKVCacheType(kvCache))
    return pm.addPass(createErrorPass(name.str() +
                                      ": kv-cache: expected f32 or f16, got '" +
                                      kvCache + "'"));
  if (schedule != "default" && schedule != "none")
    return pm.addPass(createErrorPass(name.str() +
                                      ": schedule: expected default or none, "
                                      "got '" +
                                      schedule + "'"));
  auto resolved = resolveTarget(target);
  if (!resolved)
    return pm.addPass(createErrorPass(name.str() + ": " +
                                      llvm::toString(resolved.takeError())));
  auto tuned = Tuning::parse(tuning);
  if (!tuned)
    return pm.addPass(
        createErrorPass(name.str() + ": " + llvm::toString(tuned.takeError())));
  PipelineOptions po;
  po.target = std::move(*resolved);
  po.actQuant = actQuant;
  po.kvCache = kvCache;
  po.defaultSchedule = schedule == "default";
  po.profile = profile;
  po.tuning = std::move(*tuned);
  if (!mesh.empty()) {
    po.distribute.emplace();
    po.distribute->mesh = mesh;
  }
  buildCompilePipeline(pm, po, last, first);
}
} // namespace

void llmc::registerLLMCPasses() {
  graph::registerGraphPasses();
  dist::registerDistPasses();
  tl::registerTLPasses();
  cpu::registerCPUPasses();
  cuda::registerCUDAPasses();
  vulkan::registerVulkanPasses();
  registerLLMCConversionPasses();
  PassRegistration<ScheduleSlotPass>();
  PassPipelineRegistration<CompileOptions>(
      "llmc-compile",
      "every phase from graph up to `to`, for `target` (the pipeline "
      "llmc compile runs)",
      [](OpPassManager &pm, const CompileOptions &options) {
        std::optional<Phase> last = parsePhase(options.to);
        if (!last)
          return pm.addPass(createErrorPass("llmc-compile: unknown phase '" +
                                            options.to +
                                            "' (expected graph, tl or llvm)"));
        buildRegistered(pm, "llmc-compile", options.target, options.actQuant,
                        options.kvCache, options.schedule, options.profile,
                        options.tuning, options.mesh, Phase::Graph, *last);
      });
  for (auto [name, phase, what] :
       {std::tuple{"llmc-graph", Phase::Graph, "the graph phase"},
        std::tuple{"llmc-tl", Phase::TL, "the tl phase"},
        std::tuple{"llmc-llvm", Phase::LLVM,
                   "the target phase (the back end's lowering)"}}) {
    Phase p = phase;
    llvm::StringRef n = name;
    PassPipelineRegistration<PhaseOptions>(
        name, what, [p, n](OpPassManager &pm, const PhaseOptions &options) {
          buildRegistered(pm, n, options.target, options.actQuant,
                          options.kvCache, options.schedule, options.profile,
                          options.tuning, options.mesh, p, p);
        });
  }
}
