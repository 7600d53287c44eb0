//===- ReleaseBuffers.cpp - free function-level buffers after last use ----===//
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"

#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLRELEASEBUFFERS
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;

namespace {
struct TLReleaseBuffersPass
    : llmc::tl::impl::TLReleaseBuffersBase<TLReleaseBuffersPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("tl-release-buffers expects a single-block function body");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    SmallVector<memref::AllocOp> allocs(entry.getOps<memref::AllocOp>());
    for (memref::AllocOp alloc : allocs) {
      Operation *last = alloc;
      bool escapes = false;
      // Follow views: their uses are uses of the allocation.
      SmallVector<Value> worklist = {alloc.getResult()};
      while (!worklist.empty() && !escapes) {
        Value v = worklist.pop_back_val();
        for (OpOperand &use : v.getUses()) {
          Operation *user = use.getOwner();
          if (isa<memref::DeallocOp>(user) ||
              isa<func::ReturnOp, CallOpInterface>(user)) {
            escapes = true; // already freed, or owned elsewhere
            break;
          }
          if (auto store = dyn_cast<memref::StoreOp>(user);
              store && store.getValueToStore() == v) {
            escapes = true;
            break;
          }
          if (auto view = dyn_cast<ViewLikeOpInterface>(user);
              view && view.getViewSource() == v)
            worklist.push_back(view->getResult(0));
          Operation *top = entry.findAncestorOpInBlock(*user);
          if (top && last->isBeforeInBlock(top))
            last = top;
        }
      }
      if (escapes)
        continue;
      OpBuilder b(last->getContext());
      b.setInsertionPointAfter(last);
      memref::DeallocOp::create(b, alloc.getLoc(), alloc);
    }
  }
};
} // namespace
