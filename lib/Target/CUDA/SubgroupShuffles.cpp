//===- SubgroupShuffles.cpp - warp sums as butterflies of shuffles --------===//
//
// NVVM lowers `gpu.shuffle` (shfl.sync; a 64-bit value as two) but not a
// float `gpu.subgroup_reduce`: upstream's patterns rewrite each into
// log2(warp) xor shuffles (clustered ones within their cluster), vectors
// first broken into parts of at most 32 bits.
//
//===----------------------------------------------------------------------===//
#include "Target/CUDA/Passes.h"
#include "Target/TargetOption.h"

#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc::cuda {
#define GEN_PASS_DEF_CUDASUBGROUPSHUFFLES
#include "Target/CUDA/Passes.h.inc"
} // namespace llmc::cuda

using namespace mlir;
using namespace llmc;

namespace {

struct CUDASubgroupShufflesPass
    : llmc::cuda::impl::CUDASubgroupShufflesBase<CUDASubgroupShufflesPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc =
        parseTargetOption(getOperation(), "cuda-subgroup-shuffles", target);
    if (failed(desc))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateGpuBreakDownSubgroupReducePatterns(patterns,
                                               /*maxShuffleBitwidth=*/32);
    // 32-bit values (and narrower ones, packed) first; the exact mode's f64
    // sums as 64-bit shuffles, which the NVVM lowering splits in halves.
    for (unsigned bits : {32u, 64u}) {
      PatternBenefit benefit = bits == 32 ? 2 : 1;
      populateGpuLowerSubgroupReduceToShufflePatterns(
          patterns, desc->subgroupSize, bits, benefit);
      populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
          patterns, desc->subgroupSize, bits, benefit);
    }
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation().walk([](gpu::SubgroupReduceOp op) {
      op.emitOpError("has no shuffle lowering (a value of ")
          << op.getValue().getType() << ")";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
