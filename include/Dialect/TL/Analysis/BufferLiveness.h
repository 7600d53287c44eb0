//===- BufferLiveness.h - when is a function-level buffer in use? -*- C++
//-*-===//
//
// Lowering from graph allocates each intermediate at the top level of a
// function whose body is straight-line code. A buffer is in use from the
// first top-level op that touches it (directly, through a view, or inside a
// loop nest) to the last one. tl-release-buffers frees it after the last;
// tl-plan-arena gives buffers whose ranges do not overlap the same bytes.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TL_ANALYSIS_BUFFERLIVENESS_H
#define LLMC_DIALECT_TL_ANALYSIS_BUFFERLIVENESS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace llmc::tl {

struct BufferLiveRange {
  /// The first and last top-level ops of the block that use the buffer,
  /// null when nothing does.
  mlir::Operation *first = nullptr;
  mlir::Operation *last = nullptr;
  /// Returned, passed to a call, stored as a value or already freed: the
  /// buffer's lifetime is not the block's to decide.
  bool escapes = false;
};

/// The live range of `alloc` among the ops of `block` (its parent block).
BufferLiveRange topLevelLiveRange(mlir::memref::AllocOp alloc,
                                  mlir::Block &block);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_ANALYSIS_BUFFERLIVENESS_H
