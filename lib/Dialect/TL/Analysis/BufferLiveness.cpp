//===- BufferLiveness.cpp - live ranges of function-level buffers ---------===//
#include "Dialect/TL/Analysis/BufferLiveness.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

llmc::tl::BufferLiveRange llmc::tl::topLevelLiveRange(memref::AllocOp alloc,
                                                      Block &block) {
  BufferLiveRange range;
  // Follow views: their uses are uses of the allocation.
  SmallVector<Value> worklist = {alloc.getResult()};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<memref::DeallocOp, func::ReturnOp, CallOpInterface>(user)) {
        range.escapes = true;
        return range;
      }
      if (auto store = dyn_cast<memref::StoreOp>(user);
          store && store.getValueToStore() == v) {
        range.escapes = true;
        return range;
      }
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v)
        worklist.push_back(view->getResult(0));
      Operation *top = block.findAncestorOpInBlock(*user);
      if (!top)
        continue;
      if (!range.first || top->isBeforeInBlock(range.first))
        range.first = top;
      if (!range.last || range.last->isBeforeInBlock(top))
        range.last = top;
    }
  }
  return range;
}
