//===- Schedule.h - schedule primitives on tl loop nests --------*- C++ -*-===//
//
// The primitives that passes, the auto-scheduler and the Python schedule API
// all drive, in the spirit of TVM's TIR schedule. Each checks its
// preconditions first and, when one fails, emits an error located at the
// offending op and returns failure without changing the IR.
//
// Loops are handles to tl.for ops. A primitive that replaces loops returns
// the new ones; handles to replaced loops are invalid afterwards.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_TL_TRANSFORMS_SCHEDULE_H
#define LLMC_DIALECT_TL_TRANSFORMS_SCHEDULE_H

#include "Dialect/TL/IR/TL.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Support/LLVM.h"

namespace llmc::tl {

/// The tl.block named `name` under `root`; an error (at `root`) when there is
/// none or more than one.
mlir::FailureOr<BlockOp> getBlock(mlir::Operation *root, llvm::StringRef name);

/// The tl.for loops enclosing `block`, outermost first.
llvm::SmallVector<ForOp> getLoops(BlockOp block);

/// Splits `loop` (normalised: lower bound 0, step 1) into `factors.size()`
/// nested loops, outermost first. At most one factor may be -1, the first,
/// and it is inferred as the ceiling of extent / product(other factors).
/// Extents that do not divide evenly give the innermost loops a bound of
/// min(factor, remaining), so no iteration runs out of range.
mlir::FailureOr<llvm::SmallVector<ForOp>>
split(mlir::RewriterBase &rewriter, ForOp loop, llvm::ArrayRef<int64_t> factors);

/// Reorders the loops of a perfect nest: `order` lists every loop of a chain
/// of directly nested loops, in the new order (outermost first). No loop's
/// bounds may depend on another loop of the chain.
mlir::FailureOr<llvm::SmallVector<ForOp>>
reorder(mlir::RewriterBase &rewriter, llvm::ArrayRef<ForOp> order);

/// Fuses directly nested, normalised loops (outermost first) into one loop
/// over the product of their extents.
mlir::FailureOr<ForOp> fuse(mlir::RewriterBase &rewriter,
                            llvm::ArrayRef<ForOp> loops);

/// Marks `loop` parallel: every block under it must bind the loop only to
/// spatial variables, and write distinct elements in distinct iterations.
mlir::LogicalResult parallel(ForOp loop);
/// Marks an innermost loop with a constant extent vectorized (same data
/// conditions as parallel).
mlir::LogicalResult vectorize(ForOp loop);
/// Marks a loop with a constant extent to be unrolled.
mlir::LogicalResult unroll(ForOp loop);
/// Binds `loop` to a GPU thread axis (threadIdx.{x,y,z} or blockIdx.{x,y,z});
/// the data conditions of parallel apply.
mlir::LogicalResult bind(ForOp loop, llvm::StringRef thread);

/// Moves the init of reduction block `block` out of its reduction loops:
/// a new block "<name>_init" (the spatial variables, the init as its body,
/// the block's writes as its writes) runs right before `loop`, and `block`
/// loses its init. `loop` must enclose `block`, and every loop from `loop`
/// inward must bind only reduction variables of the block. (TVM's
/// decompose_reduction; it lets the accumulator live in a register.)
mlir::FailureOr<BlockOp> decomposeReduction(mlir::RewriterBase &rewriter,
                                            BlockOp block, ForOp loop);

/// Reads buffer `reads[readIndex]` of `block` through a copy: a new buffer
/// is allocated and filled by a block "<name>_cache_read" right before the
/// outermost loop around `block`, and `block` reads the copy. Nothing inside
/// that loop nest may write the buffer. Returns the copy block.
mlir::FailureOr<BlockOp> cacheRead(mlir::RewriterBase &rewriter, BlockOp block,
                                   unsigned readIndex);

/// Writes buffer `writes[writeIndex]` of `block` through a copy: `block`
/// writes (and reads back) a new buffer, which a block "<name>_cache_write"
/// copies to the original right after the outermost loop around `block`.
/// No other block in that loop nest may access the buffer, and `block` may
/// read it only where its init has written it first. Returns the copy block.
mlir::FailureOr<BlockOp> cacheWrite(mlir::RewriterBase &rewriter,
                                    BlockOp block, unsigned writeIndex);

/// Moves producer `block` (alone in its own loop nest, before `loop`) to the
/// start of the body of `loop`, computing in each iteration exactly the
/// elements that the blocks under `loop` read from its output: for every
/// output dimension, the range the consumers' read regions cover when the
/// loops inside `loop` run through their extents. Every later reader of the
/// output must be under `loop`. Requirements: the producer's spatial
/// variables are bound to its loops (start 0, step 1) and its single write
/// region is one spatial variable per dimension; consumer indices are
/// affine and linear in the loops inside `loop`.
mlir::FailureOr<BlockOp> computeAt(mlir::RewriterBase &rewriter,
                                   BlockOp block, ForOp loop);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_TRANSFORMS_SCHEDULE_H
