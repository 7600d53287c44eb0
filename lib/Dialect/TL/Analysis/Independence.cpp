//===- Independence.cpp - may a loop's iterations run at once? ------------===//
#include "Dialect/TL/Analysis/Independence.h"
#include "Dialect/TL/Analysis/AffineIndex.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "llvm/ADT/MapVector.h"

#include <numeric>

using namespace mlir;
using namespace llmc::tl;

/// The range [lo, hi] a loop variable takes: lower bound and step constant,
/// upper bound a constant or a min with one.
static std::optional<std::pair<int64_t, int64_t>> ivRange(ForOp l) {
  auto lb = getConstantIntValue(l.getLowerBound());
  auto step = getConstantIntValue(l.getStep());
  if (!lb || !step || *step <= 0)
    return std::nullopt;
  Value ub = l.getUpperBound();
  std::optional<int64_t> hi = getConstantIntValue(ub);
  if (!hi)
    if (auto min = ub.getDefiningOp<arith::MinUIOp>()) {
      auto a = getConstantIntValue(min.getLhs());
      auto b = getConstantIntValue(min.getRhs());
      hi = a && b ? std::min(*a, *b) : a ? a : b;
    }
  if (!hi)
    if (auto min = ub.getDefiningOp<arith::MinSIOp>()) {
      auto a = getConstantIntValue(min.getLhs());
      auto b = getConstantIntValue(min.getRhs());
      hi = a && b ? std::min(*a, *b) : a ? a : b;
    }
  if (!hi)
    return std::nullopt;
  if (*hi <= *lb)
    return std::pair<int64_t, int64_t>{*lb, *lb};
  return std::pair<int64_t, int64_t>{*lb, *lb + (*hi - 1 - *lb) / *step * *step};
}

namespace {
/// One access to a shared buffer under the loop.
struct Access {
  BlockOp block;
  SmallVector<AffineExpr> indices;
  bool write;
};
} // namespace

Value llmc::tl::viewedBuffer(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

LogicalResult llmc::tl::verifyIndependent(ForOp loop, StringRef what,
                                          Operation *within) {
  // One iteration (or none) has no other to conflict with.
  auto lb = getConstantIntValue(loop.getLowerBound());
  auto ub = getConstantIntValue(loop.getUpperBound());
  auto step = getConstantIntValue(loop.getStep());
  if (lb && ub && step && *step > 0 && *ub - *lb <= *step)
    return success();
  Value iv = loop.getInductionVar();
  auto fail = [&](BlockOp block, const Twine &msg) {
    InFlightDiagnostic diag = loop.emitError(what) << ": " << msg;
    diag.attachNote(block.getLoc()) << "the block is here";
    return diag;
  };
  // Buffers allocated inside the loop are private to an iteration.
  auto isPrivate = [&](Value buffer) {
    Operation *def = viewedBuffer(buffer).getDefiningOp();
    return def && loop->isProperAncestor(def) &&
           isa<memref::AllocOp, memref::AllocaOp>(def);
  };
  // Index values computed inside the loop by other ops (a divui of a
  // bound) stand as opaque dims: an access may still be shown disjoint by
  // another of its dimensions.
  AffineIndexBuilder builder(loop, /*opaqueInside=*/true);
  builder.dim(iv); // dim 0
  llvm::MapVector<Value, SmallVector<Access>> accesses;
  std::optional<LogicalResult> result;
  (within ? within : loop.getOperation())->walk([&](BlockOp block) {
    if (result)
      return;
    // A loop that binds a spatial variable too (the rows of a causal
    // attention, whose reductions end where the row does) runs separate
    // reductions in its iterations: the writes decide below.
    bool bindsSpatial = false;
    for (unsigned i = 0, e = block.getNumIters(); i < e; ++i)
      bindsSpatial |= block.getIterKind(i) == IterKind::spatial &&
                      isComputedFrom(block.getIterValues()[i], iv, loop);
    for (unsigned i = 0, e = block.getNumIters(); i < e && !bindsSpatial; ++i)
      if (block.getIterKind(i) == IterKind::reduce &&
          isComputedFrom(block.getIterValues()[i], iv, loop)) {
        result = fail(block, "the loop carries reduction variable " +
                                 Twine(i) + " of tl.block '" +
                                 block.getName() +
                                 "'; its iterations are not independent");
        return;
      }
    auto record = [&](OperandRange buffers, ArrayAttr maps, bool write) {
      for (auto [buffer, attr] : llvm::zip(buffers, maps)) {
        if (isPrivate(buffer))
          continue;
        auto map = cast<AffineMapAttr>(attr).getValue();
        auto indices = builder.compose(map, block.getIterValues());
        if (!indices) {
          if (write)
            result = fail(block, "the write region of tl.block '" +
                                     block.getName() +
                                     "' is not affine in the loop variables");
          else
            accesses[buffer].push_back({block, {}, false});
          return;
        }
        accesses[buffer].push_back({block, *indices, write});
      }
    };
    record(block.getWrites(), block.getWriteMaps(), true);
    record(block.getReads(), block.getReadMaps(), false);
  });
  if (result)
    return *result;

  unsigned numDims = builder.dims.size();
  // What each dim of the expressions is: the loop itself (0), a loop inside
  // it (with its range), or a value fixed for the whole loop.
  SmallVector<std::optional<std::pair<int64_t, int64_t>>> range(numDims);
  SmallVector<bool> varying(numDims, false);
  for (unsigned d = 1; d < numDims; ++d) {
    Value v = builder.dims[d];
    if (auto arg = dyn_cast<BlockArgument>(v))
      if (auto l = dyn_cast<ForOp>(arg.getOwner()->getParentOp()))
        if (loop->isProperAncestor(l)) {
          varying[d] = true;
          range[d] = ivRange(l);
          continue;
        }
    Operation *def = v.getDefiningOp();
    varying[d] = def && loop->isProperAncestor(def);
  }

  for (auto &[buffer, list] : accesses) {
    if (!llvm::any_of(list, [](const Access &a) { return a.write; }))
      continue;
    BlockOp writer =
        llvm::find_if(list, [](const Access &a) { return a.write; })->block;
    auto conflict = [&]() {
      return fail(writer, "cannot show that iterations of the loop write "
                          "disjoint elements of a buffer of tl.block '" +
                              writer.getName() + "' (every access must index "
                              "one dimension by c * iv + r with r narrower "
                              "than c)");
    };
    if (llvm::any_of(list, [](const Access &a) { return a.indices.empty(); }))
      return conflict();
    // The common mistake gets its own message: a write that is the same in
    // every iteration (a scratch buffer shared by all of them).
    for (Access &a : list)
      if (a.write && llvm::none_of(a.indices, [&](AffineExpr e) {
            return e.isFunctionOfDim(0);
          }))
        return fail(a.block, "every iteration of the loop writes the same "
                             "elements in tl.block '" +
                                 a.block.getName() + "'");
    unsigned rank = list.front().indices.size();
    // Each access as `c * iv + fixed + [lo, hi]` in dimension d.
    // `k` is the constant in [lo, hi]; every coefficient of the loops
    // inside is a multiple of `g` (0: none).
    struct Form {
      int64_t c, lo, hi, k, g;
      AffineExpr fixed;
    };
    auto formOf = [&](AffineExpr e) -> std::optional<Form> {
      auto coef = linearCoefficient(e, 0, numDims);
      if (!coef)
        return std::nullopt;
      int64_t rlo = 0, rhi = 0, g = 0;
      SmallVector<AffineExpr> repl;
      for (unsigned k = 0; k < numDims; ++k)
        repl.push_back(getAffineDimExpr(k, e.getContext()));
      repl[0] = getAffineConstantExpr(0, e.getContext());
      for (unsigned k = 1; k < numDims; ++k) {
        if (!varying[k] || !e.isFunctionOfDim(k))
          continue;
        auto ak = linearCoefficient(e, k, numDims);
        if (!ak || !range[k])
          return std::nullopt;
        int64_t x = *ak * range[k]->first, y = *ak * range[k]->second;
        rlo += std::min(x, y);
        rhi += std::max(x, y);
        g = std::gcd(g, std::abs(*ak));
        repl[k] = getAffineConstantExpr(0, e.getContext());
      }
      AffineExpr rest = simplifyAffineExpr(e.replaceDims(repl), numDims, 0);
      int64_t constant = 0;
      if (auto ce = dyn_cast<AffineConstantExpr>(rest)) {
        constant = ce.getValue();
        rest = getAffineConstantExpr(0, e.getContext());
      } else if (auto bin = dyn_cast<AffineBinaryOpExpr>(rest);
                 bin && bin.getKind() == AffineExprKind::Add &&
                 isa<AffineConstantExpr>(bin.getRHS())) {
        constant = cast<AffineConstantExpr>(bin.getRHS()).getValue();
        rest = bin.getLHS();
      }
      return Form{*coef, constant + rlo, constant + rhi, constant, g, rest};
    };
    // Iterations i != i' of the loop are at most `span` apart.
    std::optional<std::pair<int64_t, int64_t>> own = ivRange(loop);
    int64_t span = own ? own->second - own->first : INT64_MAX / 4;
    bool proven = false;
    for (unsigned d = 0; d < rank && !proven; ++d) {
      SmallVector<std::optional<Form>> forms;
      for (const Access &a : list)
        forms.push_back(formOf(a.indices[d]));
      bool ok = true;
      for (unsigned w = 0; w < list.size() && ok; ++w) {
        if (!list[w].write)
          continue;
        for (unsigned a = 0; a < list.size() && ok; ++a) {
          const auto &fw = forms[w], &fa = forms[a];
          if (!fw || !fa || fw->c == 0 || fw->c != fa->c ||
              fw->fixed != fa->fixed) {
            ok = false;
            break;
          }
          // Same element in iterations i (write) and i' (access):
          // c * (i - i') = r_a - r_w, with r_a - r_w in [lo, hi].
          int64_t c = std::abs(fw->c);
          int64_t lo = fa->lo - fw->hi, hi = fa->hi - fw->lo;
          if (fw->c < 0)
            std::tie(lo, hi) = std::make_pair(-hi, -lo);
          // Any multiple c * D in [lo, hi] with 0 < |D| <= span?
          auto floorDiv = [](int64_t x, int64_t y) {
            return x >= 0 ? x / y : -((-x + y - 1) / y);
          };
          int64_t dlo = -floorDiv(-lo, c), dhi = floorDiv(hi, c);
          dlo = std::max(dlo, -span);
          dhi = std::min(dhi, span);
          bool clash = (dlo <= -1 && dhi >= dlo) || (dhi >= 1 && dlo <= dhi);
          // The loops inside move the element by multiples of g only (the
          // loop as the fastest digit: g * x + iv, iv < g): c * D must be
          // the constants' difference modulo g, for some D != 0 in range.
          int64_t g = std::gcd(fw->g, fa->g);
          if (dlo <= dhi && clash && g > 1 && dhi - dlo <= 65536) {
            int64_t dk = fw->c < 0 ? fw->k - fa->k : fa->k - fw->k;
            clash = false;
            for (int64_t dd = dlo; dd <= dhi && !clash; ++dd)
              clash = dd != 0 && ((c * dd - dk) % g + g) % g == 0;
          }
          if (dlo <= dhi && clash && !(dlo == 0 && dhi == 0))
            ok = false;
        }
      }
      proven = ok;
    }
    if (!proven)
      return conflict();
  }
  return success();
}

BlockOp llmc::tl::perfectNest(ForOp top, SmallVectorImpl<ForOp> &loops) {
  for (ForOp l = top; l;) {
    loops.push_back(l);
    BlockOp block;
    ForOp next;
    for (Operation &op : l.getBody()->without_terminator()) {
      if (auto b = dyn_cast<BlockOp>(op)) {
        if (block || next)
          return {};
        block = b;
      } else if (auto inner = dyn_cast<ForOp>(op)) {
        if (block || next)
          return {};
        next = inner;
      } else if (op.getNumRegions() || !isPure(&op)) {
        return {};
      }
    }
    if (block)
      return block;
    l = next;
  }
  return {};
}

/// Whether `v` is computed from `iv` (through pure ops).
static bool dependsOn(Value v, Value iv) {
  if (v == iv)
    return true;
  Operation *def = v.getDefiningOp();
  if (!def || !isPure(def) || def->getNumRegions())
    return false;
  return llvm::any_of(def->getOperands(),
                      [&](Value o) { return dependsOn(o, iv); });
}

bool llmc::tl::independentByDeclaration(ForOp l) {
  SmallVector<ForOp> loops;
  BlockOp block = perfectNest(l, loops);
  if (!block || block.hasReduction())
    return false;
  if (llvm::none_of(block.getIterValues(),
                    [&](Value v) { return dependsOn(v, l.getInductionVar()); }))
    return false;
  for (auto [w, wm] : llvm::zip(block.getWrites(), block.getWriteMaps()))
    for (auto [r, rm] : llvm::zip(block.getReads(), block.getReadMaps()))
      if (r == w && rm != wm)
        return false;
  return true;
}

BoundKinds llmc::tl::boundKinds(BlockOp block, ForOp loop) {
  BoundKinds kinds;
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i)
    if (isComputedFrom(block.getIterValues()[i], loop.getInductionVar(), loop))
      (block.getIterKind(i) == IterKind::reduce ? kinds.reduction
                                                : kinds.spatial) = true;
  return kinds;
}
