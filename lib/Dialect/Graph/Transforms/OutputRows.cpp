//===- OutputRows.cpp - compute only the rows of the result that are read -===//
//
// Gives the entry an `n_out` argument, slices its result to the last n_out
// rows with graph.last_rows, and moves the slice up through row-local ops so
// that they run on n_out rows instead of every token's.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHOUTPUTROWS
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc::graph;

/// The argument attribute that marks the row count (llmc/abi.h's n_out).
static constexpr llvm::StringLiteral kOutputRowsAttr = "llmc.output_rows";

static bool hasDynamicRows(Value v) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() >= 1 && type.isDynamicDim(0);
}

/// The operands of `op` whose row i alone makes the result's row i, when
/// `op` is row-local: every other operand has no rows (a weight, a vector
/// broadcast over the rows). Empty when `op` mixes rows or is not known.
static SmallVector<unsigned> rowOperands(Operation *op) {
  if (!isa<RMSNormOp, MatmulOp, AddOp, MulOp, SiluOp, ReshapeOp>(op) ||
      op->getNumResults() != 1 || !hasDynamicRows(op->getResult(0)))
    return {};
  unsigned rank =
      llvm::cast<RankedTensorType>(op->getResult(0).getType()).getRank();
  SmallVector<unsigned> rows;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = llvm::dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      return {};
    if (isa<MatmulOp, RMSNormOp>(op) && operand.getOperandNumber() == 1)
      continue; // the weight
    if (type.getRank() < rank && isa<AddOp, MulOp>(op))
      continue; // broadcast over the rows
    if (!hasDynamicRows(operand.get()))
      return {};
    rows.push_back(operand.getOperandNumber());
  }
  return rows;
}

/// A `last_rows(x, count)` placed before `before`: an existing one (moved
/// up, its operands dominate `before`) or a new one.
static LastRowsOp lastRowsBefore(Value x, Value count, Operation *before) {
  for (Operation *user : x.getUsers())
    if (auto slice = dyn_cast<LastRowsOp>(user))
      if (slice.getCount() == count) {
        if (!slice->isBeforeInBlock(before))
          slice->moveBefore(before);
        return slice;
      }
  OpBuilder b(before);
  return LastRowsOp::create(b, before->getLoc(), x, count);
}

/// Moves `slice` above the op defining its input when that op is row-local
/// and every user of its result takes the same rows. Returns whether it did.
static bool hoist(LastRowsOp slice) {
  Value v = slice.getInput(), count = slice.getCount();
  Operation *def = v.getDefiningOp();
  if (!def)
    return false;
  SmallVector<unsigned> rows = rowOperands(def);
  if (rows.empty())
    return false;
  for (Operation *user : v.getUsers()) {
    auto other = dyn_cast<LastRowsOp>(user);
    if (!other || other.getCount() != count)
      return false;
  }
  // The count must be available where the op is: it is an argument of the
  // entry, but a slice of a value computed before a count computed inside
  // the function would not be.
  if (Operation *countDef = count.getDefiningOp())
    if (countDef->getBlock() != def->getBlock() ||
        !countDef->isBeforeInBlock(def))
      return false;
  IRMapping mapping;
  for (unsigned i : rows) {
    Value x = def->getOperand(i);
    mapping.map(x, lastRowsBefore(x, count, def).getResult());
  }
  OpBuilder b(def);
  Operation *sliced = b.clone(*def, mapping);
  for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
    user->getResult(0).replaceAllUsesWith(sliced->getResult(0));
    user->erase();
  }
  def->erase();
  return true;
}

namespace {
struct GraphOutputRowsPass
    : llmc::graph::impl::GraphOutputRowsBase<GraphOutputRowsPass> {
  using Base::Base;
  void runOnOperation() override {
    auto fn = getOperation().lookupSymbol<func::FuncOp>(entry);
    if (!fn || fn.isExternal())
      return;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, kOutputRowsAttr))
        return; // done already
    if (fn.getNumResults() != 1 || !fn.getBody().hasOneBlock()) {
      fn.emitError("graph-output-rows: @")
          << entry << " must have one block and one result";
      return signalPassFailure();
    }
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    if (!hasDynamicRows(ret.getOperand(0))) {
      fn.emitError("graph-output-rows: the result of @")
          << entry << " must be a tensor with a dynamic leading (row) dimension";
      return signalPassFailure();
    }
    OpBuilder b(fn.getContext());
    unsigned index = fn.getNumArguments();
    if (failed(fn.insertArgument(
            index, b.getIndexType(),
            b.getDictionaryAttr(
                b.getNamedAttr(kOutputRowsAttr, b.getUnitAttr())),
            fn.getLoc())))
      return signalPassFailure();
    Value count = fn.getArgument(index);
    b.setInsertionPoint(ret);
    auto slice = LastRowsOp::create(b, ret.getLoc(), ret.getOperand(0), count);
    ret.setOperand(0, slice.getResult());
    // Move the slices up until none can move.
    for (bool changed = true; changed;) {
      changed = false;
      fn.walk([&](LastRowsOp s) {
        if (!hoist(s))
          return WalkResult::advance();
        changed = true;
        return WalkResult::interrupt();
      });
    }
  }
};
} // namespace
