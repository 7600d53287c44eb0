//===- Int8Dot.cpp - groups of four int8 products as VNNI instructions ----===//
//
// The vectorizer turns an integer dot product's group loop of four into
//
//   %p = arith.muli (ext %a : vector<4Nxi8>), (ext %b : vector<4Nxi8>)
//   %r = vector.multi_reduction <add>, (shape_cast %p to <Nx4>), %acc [1]
//
// which is exactly what VPDPBUSD computes per i32 lane: four unsigned-byte x
// signed-byte products added to the accumulator, with no saturation. The
// target description says which instruction forms exist.
//
//===----------------------------------------------------------------------===//
#include "Target/CPU/Passes.h"
#include "Target/TargetDescription.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace llmc::cpu {
#define GEN_PASS_DEF_CPUINT8DOT
#include "Target/CPU/Passes.h.inc"
} // namespace llmc::cpu

using namespace mlir;
using namespace llmc;

namespace {

/// A byte vector widened to i32 for a product: the bytes, and whether they
/// are known not to exceed 127 read as unsigned (so that VPDPBUSD's
/// unsigned operand sees the same value).
struct Bytes {
  Value value;
  bool unsignedOk = false; ///< usable as VPDPBUSD's unsigned operand
  bool signedOk = false;   ///< usable as its signed operand
};

/// Whether every lane of `v` (i8) is known to lie in [0, 127].
bool knownSmallNonNegative(Value v) {
  APInt mask;
  if (auto andOp = v.getDefiningOp<arith::AndIOp>()) {
    for (Value operand : andOp->getOperands())
      if (matchPattern(operand, m_ConstantInt(&mask)) && !mask.isNegative())
        return true;
  }
  if (auto shr = v.getDefiningOp<arith::ShRUIOp>())
    if (matchPattern(shr.getRhs(), m_ConstantInt(&mask)) && !mask.isZero())
      return true;
  if (auto orOp = v.getDefiningOp<arith::OrIOp>())
    return knownSmallNonNegative(orOp.getLhs()) &&
           knownSmallNonNegative(orOp.getRhs());
  return false;
}

std::optional<Bytes> bytesOf(Value widened) {
  Value in;
  bool zext = false;
  if (auto e = widened.getDefiningOp<arith::ExtSIOp>())
    in = e.getIn();
  else if (auto e = widened.getDefiningOp<arith::ExtUIOp>()) {
    in = e.getIn();
    zext = true;
  }
  auto type = in ? dyn_cast<VectorType>(in.getType()) : VectorType();
  if (!type || !type.getElementType().isInteger(8))
    return std::nullopt;
  Bytes b;
  b.value = in;
  bool small = knownSmallNonNegative(in);
  b.unsignedOk = zext || small;
  b.signedOk = !zext || small;
  return b;
}

struct Int8DotPattern : OpRewritePattern<vector::MultiDimReductionOp> {
  Int8DotPattern(MLIRContext *ctx, const TargetDescription &target)
      : OpRewritePattern(ctx), target(target) {}

  LogicalResult matchAndRewrite(vector::MultiDimReductionOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getKind() != vector::CombiningKind::ADD)
      return rewriter.notifyMatchFailure(op, "not a sum");
    auto srcType = op.getSourceVectorType();
    auto accType = dyn_cast<VectorType>(op.getAcc().getType());
    if (srcType.getRank() != 2 || srcType.getDimSize(1) != 4 ||
        !srcType.getElementType().isInteger(32) || !accType ||
        op.getReductionDims() != ArrayRef<int64_t>{1})
      return rewriter.notifyMatchFailure(op, "not groups of four i32");
    auto shape = op.getSource().getDefiningOp<vector::ShapeCastOp>();
    auto mul = shape ? shape.getSource().getDefiningOp<arith::MulIOp>()
                    : arith::MulIOp();
    if (!mul)
      return rewriter.notifyMatchFailure(op, "not a sum of products");
    std::optional<Bytes> x = bytesOf(mul.getLhs()), y = bytesOf(mul.getRhs());
    if (!x || !y)
      return rewriter.notifyMatchFailure(op, "not products of bytes");
    int64_t lanes = srcType.getDimSize(0);
    int64_t bits = lanes * 32;
    if (bits != 128 && bits != 256 && bits != 512)
      return rewriter.notifyMatchFailure(op, "no instruction of this width");
    std::string intrinsic;
    if (bits == 512 && target.has("avx512vnni"))
      intrinsic = "llvm.x86.avx512.vpdpbusd.512";
    else if (bits < 512 && target.has("avx512vnni") && target.has("avx512vl"))
      intrinsic = "llvm.x86.avx512.vpdpbusd." + std::to_string(bits);
    else if (bits < 512 && target.has("avxvnni"))
      intrinsic = "llvm.x86.avxvnni.vpdpbusd." + std::to_string(bits);
    else
      return rewriter.notifyMatchFailure(op, "the target has no VNNI form");

    Location loc = op.getLoc();
    auto bytes = VectorType::get({lanes * 4}, rewriter.getI8Type());
    auto dot = [&](Value acc, Value u, Value s) -> Value {
      return LLVM::CallIntrinsicOp::create(
                 rewriter, loc, accType, rewriter.getStringAttr(intrinsic),
                 ValueRange{acc, u, s})
          .getResult(0);
    };
    Value result;
    if (x->unsignedOk && y->signedOk) {
      result = dot(op.getAcc(), x->value, y->value);
    } else if (y->unsignedOk && x->signedOk) {
      result = dot(op.getAcc(), y->value, x->value);
    } else {
      // Both signed: a * b = (a ^ 0x80) * b - 128 * b, with a ^ 0x80 read
      // as unsigned (a + 128). The offset is taken off the accumulator
      // before the dot (the same i32, modulo 2^32): with a zero
      // accumulator, -offset depends on b only and is shared by every
      // product with b, instead of a subtraction per product.
      auto splat = [&](Type t, int64_t v) -> Value {
        return arith::ConstantOp::create(
            rewriter, loc,
            DenseElementsAttr::get(cast<ShapedType>(t),
                                   rewriter.getIntegerAttr(
                                       getElementTypeOrSelf(t), v)));
      };
      Value bias = splat(bytes, -128);
      Value flipped = arith::XOrIOp::create(rewriter, loc, x->value, bias);
      Value zero = splat(accType, 0);
      Value offset = dot(zero, bias, y->value);
      Value start = arith::SubIOp::create(rewriter, loc, op.getAcc(), offset);
      result = dot(start, flipped, y->value);
    }
    rewriter.replaceOp(op, result);
    return success();
  }

  const TargetDescription &target;
};

struct CPUInt8DotPass : llmc::cpu::impl::CPUInt8DotBase<CPUInt8DotPass> {
  using Base::Base;
  void runOnOperation() override {
    auto desc = TargetDescription::parse(target);
    if (!desc) {
      getOperation()->emitError("cpu-int8-dot: ")
          << llvm::toString(desc.takeError());
      return signalPassFailure();
    }
    if (desc->kind != TargetKind::CPU)
      return;
    RewritePatternSet patterns(&getContext());
    patterns.add<Int8DotPattern>(&getContext(), *desc);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
