//===- ReleaseBuffers.cpp - free function-level buffers after last use ----===//
#include "Dialect/TL/Analysis/BufferLiveness.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"

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
      llmc::tl::BufferLiveRange range = llmc::tl::topLevelLiveRange(alloc, entry);
      if (range.escapes)
        continue;
      OpBuilder b(alloc.getContext());
      b.setInsertionPointAfter(range.last && alloc->isBeforeInBlock(range.last)
                                   ? range.last
                                   : alloc.getOperation());
      memref::DeallocOp::create(b, alloc.getLoc(), alloc);
    }
  }
};
} // namespace
