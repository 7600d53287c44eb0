//===- AddThreadControl.cpp - export the thread-count setter --------------===//
#include "Target/CPU/Passes.h"

#include "llmc/abi.h"

#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/Builders.h"

namespace llmc::cpu {
#define GEN_PASS_DEF_CPUADDTHREADCONTROL
#include "Target/CPU/Passes.h.inc"
} // namespace llmc::cpu

using namespace mlir;

namespace {
struct CPUAddThreadControlPass
    : llmc::cpu::impl::CPUAddThreadControlBase<CPUAddThreadControlPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool parallel = false;
    module.walk([&](omp::ParallelOp) { parallel = true; });
    if (!parallel)
      return;
    if (module.lookupSymbol(LLMC_SET_NUM_THREADS_SYMBOL)) {
      module.emitError("the module already defines ")
          << LLMC_SET_NUM_THREADS_SYMBOL;
      return signalPassFailure();
    }
    Location loc = module.getLoc();
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    Type i32 = b.getI32Type();
    auto omp = module.lookupSymbol<func::FuncOp>("omp_set_num_threads");
    if (!omp) {
      omp = func::FuncOp::create(b, loc, "omp_set_num_threads",
                                 b.getFunctionType({i32}, {}));
      omp.setPrivate();
    }
    auto setter = func::FuncOp::create(b, loc, LLMC_SET_NUM_THREADS_SYMBOL,
                                       b.getFunctionType({i32}, {}));
    Block *entry = setter.addEntryBlock();
    b.setInsertionPointToStart(entry);
    func::CallOp::create(b, loc, omp, entry->getArguments());
    func::ReturnOp::create(b, loc);
  }
};
} // namespace
