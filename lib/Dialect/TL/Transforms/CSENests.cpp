//===- CSENests.cpp - one nest where two compute the same buffer ----------===//
//
// Common subexpression elimination at the level of loop nests: a nest that
// computes a fresh buffer exactly as an earlier nest computed another, from
// the same inputs unchanged in between, is dropped and its buffer replaced
// by the earlier one. See the pass description (Passes.td).
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/Analysis/NestEquivalence.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace llmc::tl {
#define GEN_PASS_DEF_TLCSENESTS
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;
using namespace llmc::tl;

namespace {

/// What a top-level nest reads and writes (the bases of its blocks'
/// buffers).
struct Footprint {
  llvm::SetVector<Value> reads, writes; // as the blocks name them
  llvm::DenseSet<Value> readBases, writeBases;
};

Footprint footprintOf(Operation *nest) {
  Footprint f;
  nest->walk([&](BlockOp b) {
    for (Value r : b.getReads()) {
      f.reads.insert(r);
      f.readBases.insert(viewedBuffer(r));
    }
    for (Value w : b.getWrites()) {
      f.writes.insert(w);
      f.writeBases.insert(viewedBuffer(w));
    }
  });
  return f;
}

/// A fresh top-level allocation that only tl.blocks (their regions and
/// accesses) and memref.dim use, written only inside `writer`.
bool isPrivateResult(Value buf, Operation *writer) {
  auto alloc = buf.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != writer->getBlock())
    return false;
  for (OpOperand &use : buf.getUses()) {
    Operation *user = use.getOwner();
    if (isa<memref::DimOp>(user))
      continue;
    auto block = dyn_cast<BlockOp>(user);
    if (!block)
      block = user->getParentOfType<BlockOp>();
    if (!block)
      return false;
    bool writes = user == block.getOperation()
                      ? llvm::is_contained(block.getWrites(), buf)
                      : !isa<affine::AffineLoadOp>(user);
    if (writes && !writer->isAncestor(user))
      return false;
  }
  return true;
}

/// Ops that may stand between two equal nests without changing what the
/// first one read: allocations, index arithmetic, constants, views.
bool harmless(Operation *op) {
  return isa<memref::AllocOp, memref::DimOp, ViewLikeOpInterface>(op) ||
         isa<arith::ArithDialect>(op->getDialect());
}

struct TLCSENestsPass : llmc::tl::impl::TLCSENestsBase<TLCSENestsPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return;
    Block &body = fn.getBody().front();
    SmallVector<ForOp> nests(body.getOps<ForOp>());
    // Each nest's footprint and hash, computed once.
    for (ForOp n : nests)
      footprints[n] = footprintOf(n);
    DenseMap<unsigned, SmallVector<ForOp>> keptByHash;
    for (ForOp b : nests) {
      unsigned hash = static_cast<unsigned>(NestEquivalence::hash(b));
      SmallVector<ForOp> &candidates = keptByHash[hash];
      if (ForOp a = earlierEqual(b, candidates)) {
        SmallVector<Value> from(footprints[b].writes.begin(),
                                footprints[b].writes.end());
        SmallVector<Value> to(footprints[a].writes.begin(),
                              footprints[a].writes.end());
        footprints.erase(b);
        b->erase();
        for (auto [f, t] : llvm::zip(from, to)) {
          Operation *alloc = f.getDefiningOp();
          f.replaceAllUsesWith(t);
          alloc->erase();
          // The nests that read `f` now read `t`.
          for (Operation *user : t.getUsers())
            if (Operation *nest = body.findAncestorOpInBlock(*user))
              if (isa<ForOp>(nest))
                footprints[nest] = footprintOf(nest);
        }
        ++numMerged;
        continue;
      }
      candidates.push_back(b);
    }
  }

  /// Whether every buffer `f` writes is private to its nest (`nest`).
  static bool privateWrites(const Footprint &f, Operation *nest) {
    return !f.writes.empty() &&
           llvm::all_of(f.writes,
                        [&](Value w) { return isPrivateResult(w, nest); });
  }

  /// An earlier nest of `candidates` (those with `b`'s hash) that computes
  /// what `b` does, or null.
  ForOp earlierEqual(ForOp b, ArrayRef<ForOp> candidates) {
    const Footprint &fb = footprints[b];
    if (candidates.empty() || !privateWrites(fb, b))
      return {};
    for (ForOp a : llvm::reverse(candidates)) {
      const Footprint &fa = footprints[a];
      if (fa.writes.size() != fb.writes.size() || !privateWrites(fa, a))
        continue;
      // The written buffers pair up in order, allocated alike.
      DenseMap<Value, Value> written;
      bool alike = true;
      for (auto [wa, wb] : llvm::zip(fa.writes, fb.writes)) {
        alike &= wa.getType() == wb.getType() &&
                 llvm::equal(wa.getDefiningOp()->getOperands(),
                             wb.getDefiningOp()->getOperands());
        written[wa] = wb;
      }
      if (!alike)
        continue;
      // Equal up to the written buffers (and equal constants).
      NestEquivalence eq([&](Value x, Value y) {
        auto w = written.find(x);
        if (x == y || (w != written.end() && w->second == y))
          return true;
        Attribute cx, cy;
        return matchPattern(x, m_Constant(&cx)) &&
               matchPattern(y, m_Constant(&cy)) && cx == cy;
      });
      if (!eq.equal(a, b))
        continue;
      if (changedBetween(a, b, fa))
        continue;
      return a;
    }
    return {};
  }

  /// Whether something between `a` and `b` may write what `a` read or wrote.
  bool changedBetween(ForOp a, ForOp b, const Footprint &fa) {
    for (Operation *op = a->getNextNode(); op && op != b.getOperation();
         op = op->getNextNode()) {
      if (harmless(op))
        continue;
      auto nest = dyn_cast<ForOp>(op);
      if (!nest)
        return true;
      for (Value w : footprints[nest].writeBases)
        if (fa.readBases.contains(w) || fa.writeBases.contains(w))
          return true;
    }
    return false;
  }

  DenseMap<Operation *, Footprint> footprints;
};

} // namespace
