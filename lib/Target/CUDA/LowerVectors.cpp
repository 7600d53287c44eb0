//===- LowerVectors.cpp - vector code in the forms NVVM lowers ------------===//
#include "Target/CUDA/Passes.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc::cuda {
#define GEN_PASS_DEF_CUDALOWERVECTORS
#include "Target/CUDA/Passes.h.inc"
} // namespace llmc::cuda

using namespace mlir;

namespace {

struct CUDALowerVectorsPass
    : llmc::cuda::impl::CUDALowerVectorsBase<CUDALowerVectorsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    vector::populateVectorShapeCastLoweringPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
