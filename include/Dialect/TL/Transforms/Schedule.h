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

#include "mlir/Dialect/Func/IR/FuncOps.h"
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

/// The loops of a split with its remainder peeled off.
struct PeeledSplit {
  llvm::SmallVector<ForOp> loops; ///< outermost first, inner extents constant
  ForOp tail; ///< the remaining iterations, or null when there are none
};

/// Like split with the first factor inferred, but the loops run only over
/// the whole multiples of the inner factors (so every inner loop has a
/// constant extent, as vectorize and unroll need) and the remaining
/// iterations run in a copy of the loop that follows them ("tail
/// handling"). Blocks in the copy are named "<name>_tail". When the extent
/// is a constant multiple there is no tail.
mlir::FailureOr<PeeledSplit> splitPeel(mlir::RewriterBase &rewriter,
                                       ForOp loop,
                                       llvm::ArrayRef<int64_t> innerFactors);

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
/// Marks a loop from 0 to a constant vectorized: its iterations become SIMD
/// lanes. Loops inside it must be vectorized already (a band, flattened
/// row-major into one vector). The iterations must be independent (the
/// conditions of parallel), except for an innermost loop that binds only
/// reduction variables of blocks updating an accumulator it does not index
/// (a group reduction: its lanes are reduced into those of the loops
/// around it, e.g. the four products of an int8 dot-product group).
mlir::LogicalResult vectorize(ForOp loop);
/// Marks a loop with a constant extent to be unrolled.
mlir::LogicalResult unroll(ForOp loop);
/// Binds `loop` to a GPU thread axis (threadIdx.{x,y,z} or blockIdx.{x,y,z});
/// the data conditions of parallel apply.
/// With `verify` false the caller vouches for the independence (a block's
/// declaration of spatial variables that the analysis cannot check).
mlir::LogicalResult bind(ForOp loop, llvm::StringRef thread,
                         bool verify = true);

/// Marks the matrix band rooted at `rows` (rows, columns and the reduction,
/// directly nested around one matmul block: Analysis/MatrixBand.h) as kind
/// `mma`: one subgroup of a GPU computes it on its matrix units. The rows
/// and columns must be independent (the conditions of parallel).
mlir::LogicalResult mma(ForOp rows);

/// Marks the matrix band rooted at `rows` as kind `library`: the target's
/// GEMM library computes it (cuBLAS on CUDA: one `tl.library_gemm` on the
/// host, two for a's f16 halves). The band must be the whole nest at the
/// top of its function (a host operation runs no loop around it), its rows
/// may run to any bound (a prompt's tokens), and rows and columns must be
/// independent (the conditions of parallel).
mlir::LogicalResult library(ForOp rows);

/// Moves the init of reduction block `block` out of its reduction loops:
/// a new block "<name>_init" (the spatial variables, the init as its body,
/// the block's writes as its writes) runs right before `loop`, and `block`
/// loses its init. `loop` must enclose `block`, and every loop from `loop`
/// inward must bind only reduction variables of the block. (TVM's
/// decompose_reduction; it lets the accumulator live in a register.)
mlir::FailureOr<BlockOp> decomposeReduction(mlir::RewriterBase &rewriter,
                                            BlockOp block, ForOp loop);

/// What rfactor made: the partial reduction, its write-back into the
/// original output, and the nest that fills the partials with the
/// combiner's identity.
struct RFactorResult {
  BlockOp rf, writeBack, init;
};

/// Factors reduction `block` over the loops `lanes` (directly nested,
/// constant extents, each binding only reduction variables of the block;
/// TVM's rfactor): a buffer of partial results, one per lane (the lanes of
/// several loops flattened row-major into its last dimension) and per
/// iteration of the spatial loops nested inside the reduction (such as the
/// rows of a register tile), is allocated right before the outermost loop
/// of the reduction; a block "<name>_rf_init" fills it with the combiner's
/// identity, the block itself becomes "<name>_rf", accumulating each lane
/// into its own partial (the lane loops now bind spatial variables of it),
/// and a block "<name>" after the reduction combines the partials into the
/// output in lane order, with the original init. Requirements: the block's
/// update is `acc = combine(acc, x)` (or an fma) of its one written buffer,
/// which no other block under the reduction touches; its iteration
/// variables are affine in the loops; every loop inside the reduction binds
/// either only reduction or only spatial variables (the spatial ones with
/// constant extents).
///
/// With no lane loops (`lanes` empty), one partial per spatial iteration
/// inside the reduction: an accumulator that registers can hold where the
/// output is a buffer in memory (TVM's cache_write to a local scope), added
/// to the output after the reduction (no loop over lanes there): for a
/// block without init, which adds to what its output holds, or one whose
/// init stores 0 into a sum, which then stores the accumulator as the
/// output.
///
/// With `root` (a loop around the block that binds a reduction variable),
/// the reduction factored is the part from `root` inward: the partials are
/// allocated right before `root` and added to the output right after it,
/// inside the reduction loops outside `root` (a reduction blocked for a
/// cache, its outer steps around the tile loops). The write-back then binds
/// the reduction variables' outer parts as its own reduction variables: its
/// init (the block's) runs at their first iteration, and every iteration
/// adds its partials.
mlir::FailureOr<RFactorResult> rfactor(mlir::RewriterBase &rewriter,
                                       BlockOp block,
                                       llvm::ArrayRef<ForOp> lanes,
                                       ForOp root = {});

/// Combines the partials of a write-back reduction `block` (one reduction
/// variable, bound to the loop directly around it, of a constant power-of-
/// two extent L, reading a stack buffer of partials at that variable) in a
/// fixed tree instead of in order: log2(L) levels "<name>_tree<j>" each add
/// the upper half of the remaining lanes into the lower (lane i += lane
/// i + h, h = L/2, L/4, ..., 1), in place, then "<name>" combines lane 0
/// into the output (after the original init). This is the order of a SIMD
/// horizontal sum (GCC's _mm512_reduce_add_ps, ggml's hsum).
///
/// With a `segment` S < L (a power of two), the lanes are L/S segments of S
/// consecutive lanes, each reduced by its own tree (the levels loop over the
/// segments too), and "<name>" keeps a reduction loop over the segments,
/// combining their first lanes in order: the sum of several vector
/// accumulators, each reduced horizontally (ggml's two-register BF16 dot).
struct TreeReduceResult {
  llvm::SmallVector<BlockOp> levels; ///< widest first
  BlockOp final;
};
mlir::FailureOr<TreeReduceResult> treeReduce(mlir::RewriterBase &rewriter,
                                             BlockOp block,
                                             int64_t segment = 0);

/// Contracts the update `acc = acc + a * b` of a floating-point reduction
/// block into one fused multiply-add, `acc = fma(a, b, acc)`: one rounding
/// instead of two, as SIMD dot-product kernels accumulate. The product must
/// have no other use.
mlir::LogicalResult contract(mlir::RewriterBase &rewriter, BlockOp block);

/// Fuses sibling loops (consecutive in one block, equal bounds and step;
/// only side-effect-free scalar ops between them, which move before the
/// first) into the first: one loop whose body runs each loop's body in
/// turn. Legal where the fused loop's iterations are independent (checked
/// with the independence analysis on a copy before anything changes): then
/// running iteration i of every loop before iteration i + 1 of any computes
/// what running each loop through in turn did. Returns the fused loop.
mlir::FailureOr<ForOp> fuseSiblings(mlir::RewriterBase &rewriter,
                                    llvm::ArrayRef<ForOp> loops);

/// The shape of a top-level nest as a GPU launch that fuseLaunches takes:
/// a chain of loops bound to blockIdx axes (constant extents, at most one
/// of them past 1) around the workgroup's body (steps bound to threadIdx.x,
/// serial loops of steps, stack buffers, index arithmetic; no matrix band).
struct LaunchShape {
  int64_t workgroups = 1;
  /// The widest step's threads.
  int64_t threads = 1;
  /// The workgroup's stack buffers (workgroup memory), in bytes.
  int64_t sharedBytes = 0;
};
mlir::FailureOr<LaunchShape>
launchShape(ForOp nest, llvm::function_ref<void(const llvm::Twine &)> why);

/// Whether no buffer that one of launches `a` and `b` writes is accessed by
/// the other (but at elements their regions show apart: constants that
/// differ in one dimension of the same view).
bool launchesIndependent(ForOp a, ForOp b);

/// Whether `op`, lying between launches to fuse, may move before the first:
/// index arithmetic, views, allocations of a static shape.
bool movesAcrossLaunches(mlir::Operation *op);

/// Launch fusion: consecutive top-level nests (launchShape; only index
/// arithmetic, views and allocations between them, which move before the
/// first), pairwise independent (launchesIndependent), become one nest of
/// the sum of their workgroups on blockIdx.x, each workgroup running the
/// part its index falls in: a serial loop of zero or one iteration per part
/// (its bounds depend on the workgroup only) holds the part's workgroup
/// body with its grid index the fused index less the part's offset, its
/// stack buffers before the guards. The fused loop's iterations are shown
/// independent by the analysis before the launches go. Returns the fused
/// nest. (lib/Dialect/TL/Transforms/FuseLaunches.cpp)
mlir::FailureOr<ForOp> fuseLaunches(mlir::RewriterBase &rewriter,
                                    llvm::ArrayRef<ForOp> nests);

/// One part of a fused launch: the guard that runs it in workgroups
/// [offset, offset + workgroups) of the fused index.
struct LaunchPart {
  ForOp guard;
  int64_t offset, workgroups;
};
/// The parts of `loop` when it is a fused launch (the form fuseLaunches
/// makes), else nullopt.
std::optional<llvm::SmallVector<LaunchPart>> fusedLaunchParts(ForOp loop);
/// Checks that fused launch `loop`'s workgroups are independent: its parts
/// pairwise (launchesIndependent), each part's workgroups over the fused
/// index (verifyIndependent within the part). Errors are prefixed with
/// `what`.
mlir::LogicalResult verifyFusedLaunch(ForOp loop, llvm::StringRef what);

/// Loop distribution (fission): `loop`, whose body is a sequence of loop
/// nests and blocks (its parts) with scalar ops between them, becomes one
/// copy of the loop per part, in order, each holding that part and the
/// scalar ops it uses. Legal where the loop's iterations are independent
/// (verifyIndependent): each part then sees, at every iteration, what the
/// parts before it computed for that iteration. A stack buffer allocated in
/// the body for one iteration must be used by one part only. Returns the
/// new loops (the original is gone). Every precondition is checked first.
mlir::FailureOr<llvm::SmallVector<ForOp>> distribute(mlir::RewriterBase &rewriter,
                                                     ForOp loop);

/// Buffer expansion: stack buffer `buffer`, allocated in the body of
/// normalised `loop` (constant extent E) for each iteration, is allocated
/// once before the loop with a leading dimension of E, each iteration using
/// its own slice. Every access is through a tl.block with an iteration
/// variable bound to the loop's variable plus multiples of E (a token's
/// index after a split into tiles of E): its slice is that variable mod E.
/// What each iteration computes is unchanged; the loop's iterations then
/// share no stack buffer, so loops inside may move around it (distribute).
/// Returns the new buffer. Every precondition is checked first.
mlir::FailureOr<mlir::Value> expand(mlir::RewriterBase &rewriter,
                                    mlir::Value buffer, ForOp loop);

/// Runs normalised `loop` backwards: iteration i becomes ub - 1 - i (its
/// variable is replaced by that expression). Every block under the loop
/// must bind the loop's variable, so the loop enumerates their iteration
/// domain: only the order of a reduction changes. (An instruction that adds
/// its pair products odd first, like VDPBF16PS, is a reversed pair loop.)
mlir::LogicalResult reverse(mlir::RewriterBase &rewriter, ForOp loop);

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

/// Holds the f32 values reduction `block` multiplies from its read
/// `readIndex` as two f16 halves: a nest before the block's writes hi =
/// f16(v) and lo = f16((v - hi) * 2^11) into two new buffers shaped like the
/// read's (block "<name>_halves"), and the block's product v * f becomes
/// ext(hi) * f + (ext(lo) * f) * 2^-11 (hi and lo keep v to about 22 bits,
/// for |v| below f16's largest, 65504; past it hi is infinite, as an f16
/// model's activations would be).
/// The form f16 matrix units multiply (Analysis/MatrixBand.h) without
/// rounding the values to f16. The block must add v * f (or fma) into its
/// accumulator, v the read's one load; nothing in the nest may write the
/// buffer. Returns the halves' block. With `reuse` (an earlier halves block
/// of the same buffer, which the caller knows nothing writes since) the
/// block reads its halves instead of a new nest's.
mlir::FailureOr<BlockOp> splitHalves(mlir::RewriterBase &rewriter,
                                     BlockOp block, unsigned readIndex,
                                     BlockOp reuse = {});

/// The weight of matmul `block` (the factor of its product that varies with
/// the output's columns: a quantized matrix's element, a scale times a
/// quant, or a bf16 or f32 element) written once by a nest of its own
/// (block "<name>_weight_halves", before the block's nest) as two f16
/// matrices [N, K]: hi = f16(w), lo = f16((w - hi) * 2^11), which hold
/// Q8_0's, Q4_0's and bf16's elements exactly (hi + lo * 2^-11), an f32's
/// to about 22 bits; an f16 weight is refused (a band takes it). The block's
/// reduction loops (a perfect chain right around it, from 0 to constants)
/// become one loop over K (their elements row-major; every other access
/// must use them only in that order), and its product x * w becomes x *
/// ext(hi) + (x * ext(lo)) * 2^-11, or, x split into halves already
/// (split_halves), xh * hi + (xl * hi + xh * lo) * 2^-11 (xl * lo, a
/// relative 2^-22, left out), the latter the form of a matrix band
/// (Analysis/MatrixBand.h); a residual the block's init starts from is
/// kept. The weight varies with one spatial variable
/// (the columns, a loop from 0 to a constant) and the reduction's; x is a
/// loaded element. Returns the weight's block; with `check`, changes
/// nothing and returns a null block where it would apply.
mlir::FailureOr<BlockOp> dequantHalves(mlir::RewriterBase &rewriter,
                                       BlockOp block, bool check = false);

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

/// Reads buffer `reads[readIndex]` of `block` (under `loop`) through a
/// stack buffer holding, at each iteration of `loop`, just the region the
/// block reads there (TVM's cache_read, compute_at and buffer compaction in
/// one; on a GPU, a tile staged in workgroup memory): a buffer of the
/// region's constant shape is allocated at the start of the loop's body and
/// filled there by a nest "<name>_stage" (a loop per dimension, row-major);
/// `block` is replaced by a copy that reads it, with an iteration variable
/// added per dimension of more than one element, bound to the element's
/// offset in the region (computed from the loops under `loop`; a reduction
/// variable where the dimension's index uses one). Requirements: every
/// access of the buffer in the block is its declared read region; the
/// region's indices are affine in the loops and linear with constant
/// coefficients in the loops under `loop` that they use (normalised,
/// constant extents); nothing under `loop` writes the buffer. Every element the
/// block reads, and so every bit it computes, is unchanged. Returns the copy
/// nest's block.
mlir::FailureOr<BlockOp> stage(mlir::RewriterBase &rewriter, BlockOp block,
                               unsigned readIndex, ForOp loop);

/// The widenings (arith.extui, extsi, extf) of `block`'s body in order: the
/// values a rule or a script hoists are their operands.
llvm::SmallVector<mlir::Operation *> getWidenings(BlockOp block);

/// The integer-to-float conversions (uitofp, sitofp) in `block`'s body, in
/// order.
llvm::SmallVector<mlir::Operation *> getIntToFloats(BlockOp block);

/// Computes `value` (a scalar of `block`'s body) once per iteration of
/// `loop` for every iteration of the loops under `loop` it depends on, into
/// a stack buffer that `block` then reads in its place (a hoisted,
/// precomputed operand: a quantized weight's unpacking done once for every
/// token that reads it). The buffer, allocated at the start of the loop's
/// body, holds an element per iteration of the loops under `loop` that
/// `value` uses, row-major in their nesting order (one dimension: a band
/// of vectorized loops reads it as a vector); a nest "<name>_hoist" of those
/// loops (their kinds; parallel ones serial) computes it there with a copy of
/// the ops `value` comes from. Requirements: those ops are side-effect free
/// but for affine loads of buffers that nothing under `loop` writes; each
/// variable of the block they use is bound to a loop under `loop` (from 0
/// by 1 to a constant) or to a value defined outside it. Every bit is
/// unchanged. `quiet` fails without a diagnostic; `bytes`, when given, gets
/// the buffer's size and nothing changes (a rule weighing the buffer).
mlir::FailureOr<BlockOp> hoistValue(mlir::RewriterBase &rewriter, BlockOp block,
                                    mlir::Value value, ForOp loop,
                                    bool quiet = false,
                                    int64_t *bytes = nullptr);

/// Inlines elementwise consumer `block` into the block that produces the
/// buffer it reads (TVM's reverse_compute_inline): where the producer stores
/// an element of that buffer, it computes the consumer's element from it
/// and stores that into the consumer's output; the consumer's loop nest and
/// the intermediate buffer go. Requirements: `block` has no reduction
/// variable, writes one buffer, reads the producer's buffer once with one
/// variable per dimension in order, and is alone in its loop nest; the
/// producer is the buffer's only writer, has no reduction variable, stores
/// it once in its body and does not read it; nothing else uses the buffer;
/// no op between the two nests writes what `block` reads or accesses its
/// output. The computation of each element, and so every bit, is unchanged.
/// Every precondition is checked before anything changes; `quiet` fails
/// without a diagnostic (a pass trying every block). With `intoReduction`
/// the producer may also be a reduction adding into the buffer (out +=
/// ..., from an init) when `block` adds one value to each element (z = y +
/// x): x is added to the init's value instead, and the sums accumulate in
/// the consumer's output: the same terms, added in another order (a GPU's
/// residual add in its product's launch).
mlir::LogicalResult reverseComputeInline(mlir::RewriterBase &rewriter,
                                         BlockOp block, bool quiet = false,
                                         bool intoReduction = false);

/// The spatial blocks alone in a top-level loop nest of `func` (none when it
/// is external or has several blocks), in program order: the candidates of
/// the passes that try the inlining primitives on every block.
llvm::SmallVector<BlockOp> spatialBlocksAloneInNests(mlir::func::FuncOp func);

/// Inlines spatial producer `block` into every block that reads its output
/// (TVM's compute_inline): each load of the buffer becomes the producer's
/// computation of that element, at the consumer's indices; the producer's
/// loop nest and the buffer go. Requirements: `block` has no reduction
/// variable, is alone in its loop nest, writes one buffer of the function's
/// own with one store in its body and a write region of one variable per
/// dimension, each variable once, and does not read it; every other user
/// of the buffer is a block after the producer's nest that only reads it
/// (affine loads over its variables); nothing from the producer's nest to
/// the last consumer writes what the producer reads; the values the
/// producer uses from outside are defined before the consumers. Each
/// element is computed with the same operations: every bit is unchanged.
/// Every precondition is checked before anything changes; `quiet` fails
/// without a diagnostic (a pass trying every block).
mlir::LogicalResult computeInline(mlir::RewriterBase &rewriter, BlockOp block,
                                  bool quiet = false);

} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_TRANSFORMS_SCHEDULE_H
