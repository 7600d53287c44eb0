//===- GPUBackend.cpp - what the GPU back ends share ----------------------===//
#include "Target/GPU/GPUBackend.h"

#include "Conversion/Passes.h"
#include "Dialect/TL/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace llmc;

void llmc::buildGPUKernels(OpPassManager &pm) {
  pm.addPass(tl::createTLPlanArena());
  pm.addNestedPass<func::FuncOp>(tl::createTLReleaseBuffers());
  pm.addPass(tl::createTLOutlineKernels());
  pm.addPass(createConvertTLToGPU());
}

void GPUBackend::describe(llvm::json::OStream &j, ModuleOp lowered) const {
  auto program = lowered->getAttrOfType<StringAttr>("llmc.dispatch");
  if (!program)
    return;
  llvm::Expected<llvm::json::Value> parsed =
      llvm::json::parse(program.getValue());
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return;
  }
  if (llvm::json::Object *o = parsed->getAsObject()) {
    // The device features the kernels may use, which the runtime enables
    // (and refuses a device without).
    llvm::json::Array features;
    for (const char *f : {"fp16", "int8", "fp64", "int64"})
      if (target().has(f))
        features.push_back(f);
    (*o)["features"] = std::move(features);
    deviceFields(*o);
  }
  j.attribute("device", std::move(*parsed));
}
