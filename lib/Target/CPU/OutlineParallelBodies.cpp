//===- OutlineParallelBodies.cpp - parallel bodies as functions -----------===//
#include "Target/CPU/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"

namespace llmc::cpu {
#define GEN_PASS_DEF_CPUOUTLINEPARALLELBODIES
#include "Target/CPU/Passes.h.inc"
} // namespace llmc::cpu

using namespace mlir;

namespace {

/// Moves the body of `loop` into a new private function next to `parent`
/// and calls it from the loop.
static void outline(scf::ParallelOp loop, func::FuncOp parent,
                    SymbolTable &symbols, unsigned &counter) {
  Region &region = loop.getRegion();
  llvm::SetVector<Value> used;
  getUsedValuesDefinedAbove(region, used);
  // Constants are cloned in (the function's code sees the indices of its
  // register tiles, the bounds of its loops), the rest are arguments.
  llvm::SetVector<Value> captured;
  SmallVector<Value> constants;
  for (Value v : used) {
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>())
      constants.push_back(v);
    else
      captured.insert(v);
  }
  SmallVector<Type> argTypes;
  for (Value iv : loop.getInductionVars())
    argTypes.push_back(iv.getType());
  for (Value v : captured)
    argTypes.push_back(v.getType());
  OpBuilder b(parent);
  b.setInsertionPointAfter(parent);
  std::string name;
  do
    name = (parent.getName() + "_par" + llvm::Twine(counter++)).str();
  while (symbols.lookup(name));
  auto fn = func::FuncOp::create(b, loop.getLoc(), name,
                                 b.getFunctionType(argTypes, {}));
  fn.setPrivate();
  symbols.insert(fn);
  Block *entry = fn.addEntryBlock();
  {
    OpBuilder cb = OpBuilder::atBlockBegin(entry);
    for (Value c : constants) {
      Value copy = cb.clone(*c.getDefiningOp())
                       ->getResult(cast<OpResult>(c).getResultNumber());
      replaceAllUsesInRegionWith(c, copy, region);
    }
  }
  // Move the body (all but the scf.reduce terminator) into the function.
  Block *body = loop.getBody();
  Operation *terminator = body->getTerminator();
  entry->getOperations().splice(entry->end(), body->getOperations(),
                                body->begin(), terminator->getIterator());
  for (auto [iv, arg] :
       llvm::zip(loop.getInductionVars(), entry->getArguments()))
    iv.replaceAllUsesWith(arg);
  unsigned numIvs = loop.getNumLoops();
  for (auto [i, v] : llvm::enumerate(captured))
    replaceAllUsesInRegionWith(v, entry->getArgument(numIvs + i),
                               fn.getBody());
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, loop.getLoc());
  // The loop now only calls it.
  b.setInsertionPoint(terminator);
  SmallVector<Value> args(loop.getInductionVars());
  llvm::append_range(args, captured);
  func::CallOp::create(b, loop.getLoc(), fn, args);
}

struct CPUOutlineParallelBodiesPass
    : llmc::cpu::impl::CPUOutlineParallelBodiesBase<
          CPUOutlineParallelBodiesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<std::pair<scf::ParallelOp, func::FuncOp>> loops;
    for (auto fn : module.getOps<func::FuncOp>())
      fn.walk([&](scf::ParallelOp p) {
        if (!p->getParentOfType<scf::ParallelOp>())
          loops.push_back({p, fn});
      });
    unsigned counter = 0;
    for (auto [loop, fn] : loops) {
      if (loop.getNumReductions()) {
        loop.emitOpError("with reductions cannot be outlined");
        return signalPassFailure();
      }
      outline(loop, fn, symbols, counter);
    }
    // Static stack buffers to the entry block of their function.
    for (auto fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      Block &entry = fn.getBody().front();
      SmallVector<memref::AllocaOp> allocas;
      fn.walk([&](memref::AllocaOp a) {
        if (a->getBlock() != &entry && a.getType().hasStaticShape() &&
            a.getDynamicSizes().empty() && a.getSymbolOperands().empty())
          allocas.push_back(a);
      });
      for (memref::AllocaOp a : allocas)
        a->moveBefore(&entry, entry.begin());
    }
  }
};
} // namespace
