//===- Pipelines.cpp - llmc's named compilation phases --------------------===//
#include "Transforms/Pipelines.h"

#include "Conversion/Passes.h"
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

std::optional<llmc::Phase> llmc::parsePhase(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<Phase>>(name)
      .Case("graph", Phase::Graph)
      .Case("tl", Phase::TL)
      .Case("llvm", Phase::LLVM)
      .Default(std::nullopt);
}

void llmc::buildGraphPhase(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(graph::createGraphLayoutWeights());
}

void llmc::buildTLPhase(OpPassManager &pm) {
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
}

void llmc::buildLLVMPhase(OpPassManager &pm) {
  // Buffers are released only now, after any schedule has moved computation
  // between loop nests (compute_at can move a use past a buffer's old last
  // use).
  pm.addNestedPass<func::FuncOp>(tl::createTLReleaseBuffers());
  pm.addPass(createConvertTLToSCF());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLoopInvariantCodeMotionPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void llmc::buildCompilePipeline(OpPassManager &pm, Phase last) {
  buildGraphPhase(pm);
  if (last == Phase::Graph)
    return;
  buildTLPhase(pm);
  if (last == Phase::TL)
    return;
  buildLLVMPhase(pm);
}

void llmc::registerLLMCDialects(DialectRegistry &registry) {
  registry.insert<graph::GraphDialect, tl::TLDialect, func::FuncDialect,
                  arith::ArithDialect, math::MathDialect,
                  memref::MemRefDialect, affine::AffineDialect,
                  scf::SCFDialect, cf::ControlFlowDialect,
                  LLVM::LLVMDialect>();
  // convert-to-llvm finds each dialect's patterns through these interfaces.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

namespace {
struct CompileOptions : public PassPipelineOptions<CompileOptions> {
  Option<std::string> to{*this, "to",
                         llvm::cl::desc("last phase: graph, tl or llvm"),
                         llvm::cl::init("llvm")};
};
} // namespace

void llmc::registerLLMCPasses() {
  graph::registerGraphPasses();
  tl::registerTLPasses();
  registerLLMCConversionPasses();
  PassPipelineRegistration<>("llmc-graph", "the graph phase",
                             buildGraphPhase);
  PassPipelineRegistration<>("llmc-tl", "the tl phase", buildTLPhase);
  PassPipelineRegistration<>("llmc-llvm", "the llvm phase", buildLLVMPhase);
  PassPipelineRegistration<CompileOptions>(
      "llmc-compile", "every phase from graph up to `to`",
      [](OpPassManager &pm, const CompileOptions &options) {
        // An unknown phase is rejected by llm-opt before we get here; fall
        // back to the full pipeline for programmatic callers.
        buildCompilePipeline(pm, parsePhase(options.to).value_or(Phase::LLVM));
      });
}
