//===- EstimateCost.cpp - each kernel's work per call, in the call's sizes ===//
//
// The cost model of Analysis/Cost.h at every call of every kernel, with
// the sizes the call passes as polynomials in its caller's arguments.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/Cost.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Target/TargetDescription.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLESTIMATECOST
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc;
using namespace llmc::tl;

namespace {

constexpr llvm::StringLiteral kKernelAttr = "llmc.kernel";

ArrayAttr polyAttr(Builder &b, const CostPoly &p) {
  SmallVector<Attribute> terms;
  for (auto &[m, c] : p.terms()) {
    SmallVector<Attribute> of;
    for (const std::string &s : m)
      of.push_back(b.getStringAttr(s));
    terms.push_back(
        b.getDictionaryAttr({b.getNamedAttr("c", b.getF64FloatAttr(c)),
                             b.getNamedAttr("of", b.getArrayAttr(of))}));
  }
  return b.getArrayAttr(terms);
}

/// A kernel's work summed over its calls from one caller.
struct KernelCost {
  func::FuncOp kernel;
  std::string phase;
  int64_t calls = 0;
  NestWork work;
};

struct TLEstimateCostPass
    : llmc::tl::impl::TLEstimateCostBase<TLEstimateCostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto desc = TargetDescription::parse(target);
    if (!desc) {
      module.emitError("tl-estimate-cost: ")
          << llvm::toString(desc.takeError());
      return signalPassFailure();
    }
    CostTarget costTarget;
    costTarget.vectorBits = desc->vectorBits;
    costTarget.int8Dot = desc->hasInt8Dot(desc->vectorBits);
    costTarget.cacheLine = desc->cacheLine;
    // Kernels in the order of the module, each with its calls' sum.
    llvm::MapVector<Operation *, KernelCost> costs;
    for (auto k : module.getOps<func::FuncOp>())
      if (k->hasAttr(kKernelAttr))
        costs[k].kernel = k;
    module.walk([&](func::CallOp call) {
      auto it = costs.find(
          SymbolTable::lookupNearestSymbolFrom(call, call.getCalleeAttr()));
      if (it == costs.end())
        return;
      auto caller = call->getParentOfType<func::FuncOp>();
      KernelCost &cost = it->second;
      auto phase = caller->getAttrOfType<StringAttr>("llmc.phase");
      cost.phase = phase ? phase.str() : caller.getSymName().str();
      add(cost, call, caller, costTarget);
    });

    Builder b(&getContext());
    SmallVector<Attribute> kernels;
    for (auto &[op, cost] : costs) {
      if (!cost.calls)
        continue;
      const NestWork &w = cost.work;
      kernels.push_back(b.getDictionaryAttr({
          b.getNamedAttr("name", b.getStringAttr(cost.kernel.getSymName())),
          b.getNamedAttr("phase", b.getStringAttr(cost.phase)),
          b.getNamedAttr("calls", b.getI64IntegerAttr(cost.calls)),
          b.getNamedAttr("flops", polyAttr(b, w.flops)),
          b.getNamedAttr("int_ops", polyAttr(b, w.intOps)),
          b.getNamedAttr("instructions", polyAttr(b, w.instructions)),
          b.getNamedAttr("bytes", polyAttr(b, w.bytes)),
          b.getNamedAttr("parallel", polyAttr(b, w.parallel)),
          b.getNamedAttr("trips", polyAttr(b, w.trips)),
          b.getNamedAttr("exact", b.getBoolAttr(w.exact)),
      }));
    }
    module->setAttr("llmc.kernels", b.getArrayAttr(kernels));
  }

  /// Adds the work of one call to the kernel's sum.
  void add(KernelCost &cost, func::CallOp call, func::FuncOp caller,
           const CostTarget &target) {
    Block &entry = caller.getBody().front();
    Block &kernelEntry = cost.kernel.getBody().front();
    // The caller's arguments are the symbols (tl-plan-arena's names).
    auto callerLeaf = [&](Value v, int64_t dim) -> std::optional<CostPoly> {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &entry)
        return std::nullopt;
      std::string name = "arg" + std::to_string(arg.getArgNumber());
      if (dim >= 0)
        name += "." + std::to_string(dim);
      return CostPoly::symbol(name);
    };
    // The kernel's arguments are what the call passes.
    auto leaf = [&](Value v, int64_t dim) -> std::optional<CostPoly> {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!arg || arg.getOwner() != &kernelEntry)
        return std::nullopt;
      Value passed = call.getOperand(arg.getArgNumber());
      return dim < 0 ? estimateIndex(passed, callerLeaf)
                     : estimateDim(passed, dim, callerLeaf);
    };
    // The kernel's body is its constants and one loop nest.
    NestWork sum;
    for (Operation &op : kernelEntry)
      if (isa<ForOp, BlockOp>(op)) {
        NestWork w = estimateWork(&op, target, leaf);
        sum.flops += w.flops;
        sum.intOps += w.intOps;
        sum.instructions += w.instructions;
        sum.bytes += w.bytes;
        sum.parallel = w.parallel;
        sum.trips = w.trips;
        sum.exact &= w.exact;
      }
    NestWork &total = cost.work;
    if (!cost.calls++) {
      total = sum;
      return;
    }
    total.flops += sum.flops;
    total.intOps += sum.intOps;
    total.instructions += sum.instructions;
    total.bytes += sum.bytes;
    total.exact &= sum.exact;
  }
};

} // namespace
