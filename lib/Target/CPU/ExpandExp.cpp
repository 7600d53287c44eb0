//===- ExpandExp.cpp - math.exp as ggml's CPU back end computes it --------===//
#include "Target/CPU/Passes.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <limits>

namespace llmc::cpu {
#define GEN_PASS_DEF_CPUEXPANDEXP
#include "Target/CPU/Passes.h.inc"
} // namespace llmc::cpu

using namespace mlir;

namespace {

/// ggml's `ggml_v_expf`, lane by lane (vec.h): n = round(x / ln 2), a
/// degree-5 polynomial in the remainder, scaled by 2^n in two exact steps
/// for |n| <= 192, 0 or inf beyond.
struct ExpandExp : OpRewritePattern<math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    auto vec = dyn_cast<VectorType>(type);
    if (!getElementTypeOrSelf(type).isF32())
      return rewriter.notifyMatchFailure(op, "only f32 is expanded");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type i32 = vec ? Type(VectorType::get(vec.getShape(), b.getI32Type()))
                   : Type(b.getI32Type());
    auto c = [&](float v) -> Value {
      if (vec)
        return arith::ConstantOp::create(
            b, DenseElementsAttr::get(vec, b.getF32FloatAttr(v)));
      return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
    };
    auto ci = [&](int32_t v) -> Value {
      if (vec)
        return arith::ConstantOp::create(
            b, DenseElementsAttr::get(cast<ShapedType>(i32),
                                      b.getI32IntegerAttr(v)));
      return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
    };
    auto fma = [&](Value p, Value q, Value r) -> Value {
      return math::FmaOp::create(b, p, q, r);
    };
    Value x = op.getOperand();
    Value r = c(0x1.8p23f);
    Value z = fma(x, c(0x1.715476p+0f), r);
    Value n = arith::SubFOp::create(b, z, r);
    Value nn = arith::NegFOp::create(b, n);
    Value bb = fma(nn, c(0x1.7f7d1cp-20f), fma(nn, c(0x1.62e4p-1f), x));
    Value u = arith::MulFOp::create(b, bb, bb);
    Value j = fma(fma(fma(c(0x1.0e4020p-7f), bb, c(0x1.573e2ep-5f)), u,
                      fma(c(0x1.555e66p-3f), bb, c(0x1.fffdb6p-2f))),
                  u, fma(c(0x1.ffffecp-1f), bb, c(1.0f)));
    // scalef(j, n) for |n| <= 192: two exact power-of-two scalings.
    Value ni = arith::FPToSIOp::create(b, i32, n);
    Value half = arith::DivSIOp::create(b, ni, ci(2));
    auto pow2 = [&](Value e) -> Value {
      return arith::BitcastOp::create(
          b, type,
          arith::ShLIOp::create(b, arith::AddIOp::create(b, e, ci(127)),
                                ci(23)));
    };
    Value res = arith::MulFOp::create(
        b, arith::MulFOp::create(b, j, pow2(half)),
        pow2(arith::SubIOp::create(b, ni, half)));
    Value nonPos =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OLE, n, c(0.0f));
    Value alt = arith::SelectOp::create(
        b, nonPos, c(0.0f), c(std::numeric_limits<float>::infinity()));
    Value big = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                      math::AbsFOp::create(b, n), c(192.0f));
    rewriter.replaceOp(op, arith::SelectOp::create(b, big, alt, res));
    return success();
  }
};

struct CPUExpandExpPass
    : llmc::cpu::impl::CPUExpandExpBase<CPUExpandExpPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ExpandExp>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
