//===- CollectiveLowering.cpp - dist collectives on buffers ---------------===//
//
// dist.all_reduce and dist.all_gather (from dist-partition) become their
// buffer forms: an all-reduce sums in place, into its input's buffer where
// nothing else reads it, else into a copy; an all-gather writes a buffer of
// the result's type. A back end lowers the buffer forms to calls into the
// runtime's collectives.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Dist/IR/Dist.h"
#include "LoweringUtils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace llmc;
using namespace llmc::graph_to_tl;

namespace {

struct AllReduceLowering : GraphLowering<dist::AllReduceOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(dist::AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value buffer = adaptor.getInput();
    // (The partial residual is read again by the next add: sum a copy.)
    if (!op.getInput().hasOneUse()) {
      Value copy = nb.alloc(resultType(op), nb.dynamicSizes(buffer));
      memref::CopyOp::create(b, buffer, copy);
      buffer = copy;
    }
    dist::BufferAllReduceOp::create(b, buffer, op.getMeshAttr(), op.getAxes(),
                                    op.getReductionAttr());
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

struct AllGatherLowering : GraphLowering<dist::AllGatherOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(dist::AllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value input = adaptor.getInput();
    // A dynamic dimension is the input's (a gathered one is static: the
    // verifier's).
    Value out = nb.alloc(resultType(op), nb.dynamicSizes(input));
    dist::BufferAllGatherOp::create(b, input, out, op.getMeshAttr(),
                                    op.getAxes(), op.getGatherAxisAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

struct SendLowering : OpConversionPattern<dist::SendOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(dist::SendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    dist::BufferSendOp::create(rewriter, op.getLoc(), adaptor.getInput(),
                               op.getMeshAttr(), op.getAxes(),
                               op.getPeerAttr());
    rewriter.eraseOp(op);
    return success();
  }
};

struct RecvLowering : GraphLowering<dist::RecvOp> {
  using GraphLowering::GraphLowering;
  LogicalResult
  matchAndRewrite(dist::RecvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    NestBuilder nb(b);
    Value out = nb.alloc(resultType(op), adaptor.getSizes());
    dist::BufferRecvOp::create(b, out, op.getMeshAttr(), op.getAxes(),
                               op.getPeerAttr());
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// The rows of a tensor (a pipeline stage's count of tokens): its buffer's.
struct DimLowering : OpConversionPattern<tensor::DimOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(tensor::DimOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<MemRefType>(adaptor.getSource().getType()))
      return failure();
    rewriter.replaceOpWithNewOp<memref::DimOp>(op, adaptor.getSource(),
                                               adaptor.getIndex());
    return success();
  }
};

} // namespace

void llmc::graph_to_tl::populateCollectiveLoweringPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AllReduceLowering, AllGatherLowering, SendLowering, RecvLowering,
               DimLowering>(converter, patterns.getContext());
}
