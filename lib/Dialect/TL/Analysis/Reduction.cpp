//===- Reduction.cpp - the update of a reduction block --------------------===//
#include "Dialect/TL/Analysis/Reduction.h"
#include "Dialect/TL/Analysis/AffineIndex.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace llmc::tl;

FailureOr<ReductionUpdate> llmc::tl::matchReductionUpdate(BlockOp block) {
  if (block.getWrites().size() != 1)
    return failure();
  Value acc = block.getWrites()[0];
  Block *body = block.getBodyBlock();
  affine::AffineStoreOp store;
  affine::AffineLoadOp load;
  for (Operation &op : *body) {
    if (auto s = dyn_cast<affine::AffineStoreOp>(op); s && s.getMemRef() == acc) {
      if (store)
        return failure();
      store = s;
    }
    if (auto l = dyn_cast<affine::AffineLoadOp>(op); l && l.getMemRef() == acc) {
      if (load)
        return failure();
      load = l;
    }
  }
  if (!store || !load || load.getAffineMap() != store.getAffineMap() ||
      load.getMapOperands() != store.getMapOperands())
    return failure();
  Operation *combine = store.getValueToStore().getDefiningOp();
  if (!combine || combine->getBlock() != body)
    return failure();
  ReductionUpdate u;
  u.load = load;
  u.store = store;
  u.combine = combine;
  Value loaded = load.getResult();
  if (auto fma = dyn_cast<math::FmaOp>(combine)) {
    if (fma.getC() != loaded || isComputedFrom(fma.getA(), loaded, block) ||
        isComputedFrom(fma.getB(), loaded, block))
      return failure();
    u.kind = arith::AtomicRMWKind::addf;
    u.fma = true;
    return u;
  }
  std::optional<arith::AtomicRMWKind> kind =
      llvm::TypeSwitch<Operation *, std::optional<arith::AtomicRMWKind>>(
          combine)
          .Case([](arith::AddFOp) { return arith::AtomicRMWKind::addf; })
          .Case([](arith::AddIOp) { return arith::AtomicRMWKind::addi; })
          .Case([](arith::MulFOp) { return arith::AtomicRMWKind::mulf; })
          .Case([](arith::MulIOp) { return arith::AtomicRMWKind::muli; })
          .Case([](arith::MaxNumFOp) { return arith::AtomicRMWKind::maxnumf; })
          .Case([](arith::MinNumFOp) { return arith::AtomicRMWKind::minnumf; })
          .Case([](arith::MaximumFOp) { return arith::AtomicRMWKind::maximumf; })
          .Case([](arith::MinimumFOp) { return arith::AtomicRMWKind::minimumf; })
          .Case([](arith::MaxSIOp) { return arith::AtomicRMWKind::maxs; })
          .Case([](arith::MinSIOp) { return arith::AtomicRMWKind::mins; })
          .Case([](arith::OrIOp) { return arith::AtomicRMWKind::ori; })
          .Case([](arith::AndIOp) { return arith::AtomicRMWKind::andi; })
          .Default([](Operation *) { return std::nullopt; });
  if (!kind || combine->getNumOperands() != 2)
    return failure();
  Value lhs = combine->getOperand(0), rhs = combine->getOperand(1);
  if (lhs == loaded && !isComputedFrom(rhs, loaded, block))
    u.operand = rhs;
  else if (rhs == loaded && !isComputedFrom(lhs, loaded, block))
    u.operand = lhs;
  else
    return failure();
  u.kind = *kind;
  return u;
}

Value llmc::tl::reductionIdentity(OpBuilder &b, Location loc,
                                  arith::AtomicRMWKind kind, Type type) {
  return arith::getIdentityValue(kind, type, b, loc);
}
