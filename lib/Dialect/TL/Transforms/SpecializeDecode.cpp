//===- SpecializeDecode.cpp - decode and prefill versions of the entry ----===//
#include "Dialect/TL/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLSPECIALIZEDECODE
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;

/// The sizes of `fn`'s tokens (its first argument's first dimension).
static SmallVector<memref::DimOp> tokenCounts(func::FuncOp fn) {
  SmallVector<memref::DimOp> dims;
  for (Operation *user : fn.getArgument(0).getUsers())
    if (auto d = dyn_cast<memref::DimOp>(user))
      if (d.getConstantIndex() == 0)
        dims.push_back(d);
  return dims;
}

namespace {
struct TLSpecializeDecodePass
    : llmc::tl::impl::TLSpecializeDecodeBase<TLSpecializeDecodePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fn = module.lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal())
      return; // nothing to specialize (a module of other functions)
    auto tokens = fn.getNumArguments()
                      ? dyn_cast<MemRefType>(fn.getArgumentTypes()[0])
                      : MemRefType();
    if (!tokens || tokens.getRank() < 1 || !tokens.isDynamicDim(0)) {
      fn.emitError("tl-specialize-decode: the first argument of @")
          << entry << " must be a memref with a dynamic first dimension";
      return signalPassFailure();
    }
    SymbolTable symbols(module);
    OpBuilder b(fn);
    b.setInsertionPointAfter(fn);
    auto clone = [&](StringRef suffix) {
      auto c = cast<func::FuncOp>(b.clone(*fn));
      c.setName((entry + suffix).str());
      c.setPrivate();
      c->removeAttr("llvm.emit_c_interface");
      symbols.insert(c);
      return c;
    };
    func::FuncOp prefill = clone("_prefill");
    func::FuncOp decode = clone("_decode");
    // Schedules may differ by phase (tl-default-schedule reads it).
    prefill->setAttr("llmc.phase", b.getStringAttr("prefill"));
    decode->setAttr("llmc.phase", b.getStringAttr("decode"));
    // In the decode version there is one token.
    for (memref::DimOp d : tokenCounts(decode)) {
      OpBuilder db(d);
      d.replaceAllUsesWith(
          arith::ConstantIndexOp::create(db, d.getLoc(), 1).getResult());
      d.erase();
    }
    // The prefill version runs two tokens or more (the entry's dispatch
    // below; a call of none is refused before it, Model::forward): what
    // compares the count with fewer folds (the attention's
    // split over the positions, which a call of one token takes, is one
    // part there).
    for (memref::DimOp d : tokenCounts(prefill)) {
      for (Operation *use : llvm::make_early_inc_range(d->getUsers())) {
        OpBuilder ub(use);
        auto other = [&](Value v) {
          return getConstantIntValue(v == d.getResult() ? use->getOperand(1)
                                                        : use->getOperand(0));
        };
        if (auto cmp = dyn_cast<arith::CmpIOp>(use)) {
          std::optional<int64_t> c = other(cmp.getLhs());
          bool ne = cmp.getPredicate() == arith::CmpIPredicate::ne;
          if (c && *c < 2 &&
              (ne || cmp.getPredicate() == arith::CmpIPredicate::eq)) {
            cmp.replaceAllUsesWith(
                arith::ConstantIntOp::create(ub, cmp.getLoc(), ne, 1)
                    .getResult());
            cmp.erase();
          }
        } else if (auto min = dyn_cast<arith::MinUIOp>(use)) {
          std::optional<int64_t> c = other(min.getLhs());
          if (c && *c >= 0 && *c <= 2) {
            min.replaceAllUsesWith(
                arith::ConstantIndexOp::create(ub, min.getLoc(), *c)
                    .getResult());
            min.erase();
          }
        }
      }
    }
    // One token has one row of output (graph-output-rows' count).
    for (BlockArgument arg : decode.getArguments())
      if (arg.getType().isIndex() &&
          decode.getArgAttr(arg.getArgNumber(), "llmc.output_rows")) {
        OpBuilder ab = OpBuilder::atBlockBegin(&decode.getBody().front());
        arg.replaceAllUsesWith(
            arith::ConstantIndexOp::create(ab, arg.getLoc(), 1).getResult());
      }
    // The entry dispatches on the number of tokens.
    Location loc = fn.getLoc();
    Block &body = fn.getBody().front();
    SmallVector<Value> args(body.getArguments());
    fn.getBody().getBlocks().clear();
    Block *entryBlock = fn.addEntryBlock();
    b.setInsertionPointToStart(entryBlock);
    SmallVector<Value> newArgs(entryBlock->getArguments());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value n = memref::DimOp::create(b, loc, newArgs[0], zero);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value isOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, n, one);
    TypeRange results = fn.getResultTypes();
    auto ifOp = scf::IfOp::create(b, loc, results, isOne, /*withElse=*/true);
    auto call = [&](Block *block, func::FuncOp callee) {
      // Without results the branch has its (empty) yield already.
      Operation *yield = block->empty() ? nullptr : &block->back();
      OpBuilder ib = OpBuilder::atBlockEnd(block);
      if (yield)
        ib.setInsertionPoint(yield);
      auto c = func::CallOp::create(ib, loc, callee, newArgs);
      if (!yield)
        scf::YieldOp::create(ib, loc, c.getResults());
    };
    call(ifOp.thenBlock(), decode);
    call(ifOp.elseBlock(), prefill);
    func::ReturnOp::create(b, loc, ifOp.getResults());
  }
};
} // namespace
