//===- EstimateCost.cpp - each kernel's work per call, in the call's sizes ===//
//
// The cost model of Analysis/Cost.h at every call of every kernel, with
// the sizes the call passes as polynomials in its caller's arguments.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/Cost.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"
#include "Target/TargetOption.h"
#include "llmc/abi.h"

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
  func::FuncOp kernel, caller;
  int64_t calls = 0;
  NestWork work;
};

struct TLEstimateCostPass
    : llmc::tl::impl::TLEstimateCostBase<TLEstimateCostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto desc = parseTargetOption(module, "tl-estimate-cost", target);
    if (failed(desc))
      return signalPassFailure();
    CostTarget costTarget;
    costTarget.vectorBits = desc->vectorBits;
    costTarget.int8Dot = desc->hasInt8Dot(desc->vectorBits);
    costTarget.cacheLine = desc->cacheLine;
    // The sizes are the entry's (its clones for prefill and decode share
    // its arguments); another caller's arguments are not named. (A module
    // without the entry, a test's, names every caller's.)
    auto entry = module.lookupSymbol<func::FuncOp>(LLMC_FORWARD_FUNCTION);
    // Kernels by (kernel, caller) in the order of their first call: a
    // kernel that prefill and decode share is counted apart for each.
    llvm::MapVector<std::pair<Operation *, Operation *>, KernelCost> costs;
    module.walk([&](func::CallOp call) {
      auto kernel = dyn_cast_or_null<func::FuncOp>(
          SymbolTable::lookupNearestSymbolFrom(call, call.getCalleeAttr()));
      if (!kernel || !kernel->hasAttr(kKernelAttr))
        return;
      auto caller = call->getParentOfType<func::FuncOp>();
      KernelCost &cost = costs[{kernel, caller}];
      cost.kernel = kernel;
      cost.caller = caller;
      bool named =
          !entry || caller.getFunctionType() == entry.getFunctionType();
      add(cost, call, caller, costTarget, named);
    });

    Builder b(&getContext());
    SmallVector<Attribute> kernels;
    for (auto &[key, cost] : costs) {
      const NestWork &w = cost.work;
      auto phase = cost.caller->getAttrOfType<StringAttr>("llmc.phase");
      // The tuning key the schedule chose its blocking under, if any.
      StringAttr tune;
      for (Operation &op : cost.kernel.getBody().front())
        if (auto t = op.getAttrOfType<StringAttr>("llmc.tune"))
          tune = t;
      SmallVector<NamedAttribute> extra;
      if (tune)
        extra.push_back(b.getNamedAttr("tune", tune));
      kernels.push_back(b.getDictionaryAttr({
          b.getNamedAttr("name", b.getStringAttr(cost.kernel.getSymName())),
          b.getNamedAttr("caller", b.getStringAttr(cost.caller.getSymName())),
          b.getNamedAttr("phase",
                         phase ? phase
                               : b.getStringAttr(cost.caller.getSymName())),
          b.getNamedAttr("calls", b.getI64IntegerAttr(cost.calls)),
          b.getNamedAttr("flops", polyAttr(b, w.flops)),
          b.getNamedAttr("int_ops", polyAttr(b, w.intOps)),
          b.getNamedAttr("instructions", polyAttr(b, w.instructions)),
          b.getNamedAttr("bytes", polyAttr(b, w.bytes)),
          b.getNamedAttr("parallel", polyAttr(b, w.parallel)),
          b.getNamedAttr("trips", polyAttr(b, w.trips)),
          b.getNamedAttr("exact", b.getBoolAttr(w.exact)),
      }));
      if (!extra.empty()) {
        NamedAttrList attrs(cast<DictionaryAttr>(kernels.back()));
        attrs.append(extra);
        kernels.back() = attrs.getDictionary(&getContext());
      }
    }
    module->setAttr("llmc.kernels", b.getArrayAttr(kernels));
  }

  /// Adds the work of one call to the kernel's sum; with `named`, the
  /// caller's arguments are the entry's sizes.
  void add(KernelCost &cost, func::CallOp call, func::FuncOp caller,
           const CostTarget &target, bool named) {
    Block &entry = caller.getBody().front();
    Block &kernelEntry = cost.kernel.getBody().front();
    // The caller's arguments are the symbols (tl-plan-arena's names).
    auto callerLeaf = [&](Value v, int64_t dim) -> std::optional<CostPoly> {
      auto arg = dyn_cast<BlockArgument>(v);
      if (!named || !arg || arg.getOwner() != &entry)
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
