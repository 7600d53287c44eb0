//===- Cost.cpp - the work of a loop nest, as polynomials in its sizes ----===//
#include "Dialect/TL/Analysis/Cost.h"
#include "Dialect/TL/IR/TL.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/AffineExprVisitor.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace llmc;
using namespace llmc::tl;

//===----------------------------------------------------------------------===//
// CostPoly
//===----------------------------------------------------------------------===//

CostPoly CostPoly::constant(double c) {
  CostPoly p;
  if (c != 0)
    p.terms_[{}] = c;
  return p;
}

CostPoly CostPoly::symbol(StringRef name) {
  CostPoly p;
  p.terms_[{name.str()}] = 1;
  return p;
}

/// Whether `sum`, computed from terms as large as `scale`, is a zero that
/// rounding left (1/49 * 49 - 1).
static bool cancels(double sum, double scale) {
  return std::abs(sum) <= 1e-9 * std::abs(scale);
}

CostPoly CostPoly::operator+(const CostPoly &o) const {
  CostPoly r = *this;
  for (auto &[m, c] : o.terms_) {
    double &t = r.terms_[m];
    double scale = std::max(std::abs(t), std::abs(c));
    t += c;
    if (cancels(t, scale))
      r.terms_.erase(m);
  }
  return r;
}

CostPoly CostPoly::operator-(const CostPoly &o) const { return *this + o * -1; }

CostPoly CostPoly::operator*(const CostPoly &o) const {
  CostPoly r;
  for (auto &[ma, ca] : terms_)
    for (auto &[mb, cb] : o.terms_) {
      Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      llvm::sort(m);
      double &t = r.terms_[m];
      double scale = std::max(std::abs(t), std::abs(ca * cb));
      t += ca * cb;
      if (cancels(t, scale))
        r.terms_.erase(m);
    }
  return r;
}

CostPoly CostPoly::operator*(double c) const {
  return *this * CostPoly::constant(c);
}

std::optional<double> CostPoly::constantValue() const {
  if (terms_.empty())
    return 0.0;
  if (terms_.size() == 1 && terms_.begin()->first.empty())
    return terms_.begin()->second;
  return std::nullopt;
}

unsigned CostPoly::degreeIn(StringRef name) const {
  unsigned degree = 0;
  for (auto &[m, c] : terms_)
    degree = std::max<unsigned>(degree, llvm::count(m, name));
  return degree;
}

bool CostPoly::dependsOn(StringRef name) const { return degreeIn(name) > 0; }

/// `p` split by the power of `name`: part[d] * name^d.
static SmallVector<CostPoly> byPower(const CostPoly &p, StringRef name) {
  SmallVector<CostPoly> parts(p.degreeIn(name) + 1);
  for (auto &[m, c] : p.terms()) {
    CostPoly rest = CostPoly::constant(c);
    unsigned d = 0;
    for (const std::string &s : m) {
      if (s == name)
        ++d;
      else
        rest = rest * CostPoly::symbol(s);
    }
    parts[d] += rest;
  }
  return parts;
}

CostPoly CostPoly::substitute(StringRef name, const CostPoly &by) const {
  CostPoly r, power = CostPoly::constant(1);
  for (const CostPoly &part : byPower(*this, name)) {
    r += part * power;
    power = power * by;
  }
  return r;
}

std::optional<CostPoly> CostPoly::sumOver(StringRef name,
                                          const CostPoly &count) const {
  SmallVector<CostPoly> parts = byPower(*this, name);
  if (parts.size() > 4)
    return std::nullopt;
  // Faulhaber: sum_{k<n} k^d for d = 0..3.
  CostPoly n = count, one = CostPoly::constant(1);
  CostPoly n1 = n - one;
  CostPoly s1 = n * n1 * 0.5;
  CostPoly sums[] = {n, s1, n * n1 * (n * 2 - one) * (1.0 / 6), s1 * s1};
  CostPoly r;
  for (auto [d, part] : llvm::enumerate(parts))
    r += part * sums[d];
  return r;
}

double CostPoly::evaluate(llvm::function_ref<double(StringRef)> value) const {
  double total = 0;
  for (auto &[m, c] : terms_) {
    double v = c;
    for (const std::string &s : m)
      v *= value(s);
    total += v;
  }
  return total;
}

double CostPoly::atReference(double reference) const {
  // A floor over a constant ("arg0.0/4") at the reference over it.
  return evaluate([&](StringRef s) {
    auto [size, divisor] = s.split('/');
    double d = 1;
    if (!divisor.empty())
      d = static_cast<double>(std::stoll(divisor.str()));
    return reference / d;
  });
}

std::string CostPoly::str() const {
  if (terms_.empty())
    return "0";
  std::string s;
  llvm::raw_string_ostream os(s);
  bool first = true;
  for (auto &[m, c] : terms_) {
    if (!first)
      os << " + ";
    first = false;
    os << llvm::format("%g", c);
    for (const std::string &x : m)
      os << "*" << x;
  }
  return s;
}

//===----------------------------------------------------------------------===//
// The estimate
//===----------------------------------------------------------------------===//

namespace {

/// The issue slots of a vector operation that does not use the multiply-add
/// units (integer adds, logic, shifts, conversions), in multiply-add slots:
/// x86 cores issue them on about twice as many ports (Zen 4/5: four vector
/// ALU pipes beside two FMA pipes; Intel: three beside two).
constexpr double kOtherIssueShare = 0.5;

/// A loop of the nest around the op being counted: its variable's name and
/// first and last values.
struct LoopRange {
  std::string name;
  CostPoly first, last, count;
};

/// The indices of one outside buffer the nest touches: per dimension, the
/// least and greatest, and how many distinct ones (at most the values of
/// the loop variables in its index: a strided layout, as V's head_dim x
/// position, touches fewer than its span).
struct Box {
  SmallVector<CostPoly> lo, hi, count;
};

/// The work of a block or loop body, per instance; bytes are kept apart.
struct Work {
  CostPoly flops, intOps, instructions;

  Work operator+(const Work &o) const {
    return {flops + o.flops, intOps + o.intOps, instructions + o.instructions};
  }
};

class Estimator {
public:
  Estimator(Operation *nest, const CostTarget &target, CostLeaf leaf)
      : nest(nest), target(target), leaf(leaf) {}

  NestWork run() {
    NestWork result;
    Work w = op(nest, /*lanes=*/1);
    result.flops = w.flops;
    result.intOps = w.intOps;
    result.instructions = w.instructions;
    for (auto &[buffer, list] : boxes)
      for (const Box &box : list)
        result.bytes += footprint(buffer, box);
    if (parallel)
      result.parallel = *parallel;
    if (trips)
      result.trips = *trips;
    result.exact = exact;
    return result;
  }
  /// A size of the caller over a constant stays a quotient ("arg0.0/4": its
  /// floor), so that a tile's remainder keeps its rows; std::nullopt for
  /// anything but one such size.
  std::optional<CostPoly> floorOf(const CostPoly &x, double d) {
    if (x.terms().size() != 1 || d != std::floor(d) || dependsOnLoop(x))
      return std::nullopt;
    auto &[m, c] = *x.terms().begin();
    if (m.size() != 1 || c != 1 || m[0].find('/') != std::string::npos)
      return std::nullopt;
    return CostPoly::symbol(m[0] + "/" + std::to_string(int64_t(d)));
  }

  /// `p` varies with a loop of the nest.
  bool dependsOnLoop(const CostPoly &p) {
    return llvm::any_of(
        loops, [&](const LoopRange &l) { return p.dependsOn(l.name); });
  }

  /// `v` is defined in the nest.
  bool inside(Value v) {
    Operation *def = v.getDefiningOp();
    Region *region = def ? def->getParentRegion() : v.getParentRegion();
    return nest && region && nest->isAncestor(region->getParentOp());
  }

  std::optional<CostPoly> index(Value v) {
    if (std::optional<int64_t> c = getConstantIntValue(v))
      return CostPoly::constant(static_cast<double>(*c));
    auto name = names.find(v);
    if (name != names.end())
      return CostPoly::symbol(name->second);
    Operation *def = v.getDefiningOp();
    if (!def)
      return leaf(v, -1);
    if (auto dim = dyn_cast<memref::DimOp>(def)) {
      std::optional<int64_t> i = dim.getConstantIndex();
      if (!i)
        return std::nullopt;
      return dimSize(dim.getSource(), *i);
    }
    if (auto apply = dyn_cast<affine::AffineApplyOp>(def)) {
      SmallVector<CostPoly> operands;
      for (Value o : apply.getMapOperands()) {
        std::optional<CostPoly> p = index(o);
        if (!p)
          return std::nullopt;
        operands.push_back(*p);
      }
      AffineMap map = apply.getAffineMap();
      return affine(map.getResult(0),
                    ArrayRef(operands).take_front(map.getNumDims()),
                    ArrayRef(operands).drop_front(map.getNumDims()));
    }
    // A choice on a size's equality with a constant (flash attention's
    // parts: select(seq == 1, parts, 1)): sizes are taken as general, so
    // the branch of "not equal" (a decode step's constant sizes fold the
    // choice before this runs). A condition the kernel receives (computed
    // by its caller) is taken as false: the lowering writes its choices as
    // select(special case, its value, the general one).
    if (auto select = dyn_cast<arith::SelectOp>(def)) {
      auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
      if (!cmp)
        return isa<BlockArgument>(select.getCondition())
                   ? index(select.getFalseValue())
                   : std::nullopt;
      if ((cmp.getPredicate() != arith::CmpIPredicate::eq &&
           cmp.getPredicate() != arith::CmpIPredicate::ne) ||
          (!getConstantIntValue(cmp.getLhs()) &&
           !getConstantIntValue(cmp.getRhs())))
        return std::nullopt;
      bool eq = cmp.getPredicate() == arith::CmpIPredicate::eq;
      return index(eq ? select.getFalseValue() : select.getTrueValue());
    }
    if (def->getNumOperands() != 2)
      return std::nullopt;
    std::optional<CostPoly> lhs = index(def->getOperand(0));
    std::optional<CostPoly> rhs = index(def->getOperand(1));
    if (!lhs || !rhs)
      return std::nullopt;
    if (isa<arith::AddIOp>(def))
      return *lhs + *rhs;
    if (isa<arith::SubIOp>(def))
      return *lhs - *rhs;
    if (isa<arith::MulIOp>(def))
      return *lhs * *rhs;
    if (isa<arith::MinUIOp, arith::MinSIOp, arith::MaxUIOp, arith::MaxSIOp>(
            def)) {
      // A tile's bound, min(tile, rest of the loop): the full tile; other
      // bounds by their size at the reference sizes.
      bool min = isa<arith::MinUIOp, arith::MinSIOp>(def);
      bool lc = lhs->constantValue().has_value();
      bool rc = rhs->constantValue().has_value();
      if (lc != rc && dependsOnLoop(lc ? *rhs : *lhs))
        return (lc == min) ? lhs : rhs;
      bool lhsSmaller = lhs->atReference() < rhs->atReference();
      return lhsSmaller == min ? lhs : rhs;
    }
    std::optional<double> d = rhs->constantValue();
    if (!d || *d <= 0)
      return std::nullopt;
    if (*d == 1 && isa<arith::DivUIOp, arith::DivSIOp, arith::FloorDivSIOp,
                       arith::CeilDivUIOp, arith::CeilDivSIOp>(def))
      return lhs;
    if (isa<arith::DivUIOp, arith::DivSIOp, arith::FloorDivSIOp>(def)) {
      if (std::optional<CostPoly> q = floorOf(*lhs, *d))
        return q;
      return *lhs * (1 / *d);
    }
    if (isa<arith::CeilDivUIOp, arith::CeilDivSIOp>(def))
      return (*lhs + CostPoly::constant(*d - 1)) * (1 / *d);
    if (isa<arith::RemUIOp, arith::RemSIOp>(def)) {
      // A size's remainder is exact (x - d * floor(x / d)); a loop
      // variable's is its mean.
      if (std::optional<CostPoly> q = floorOf(*lhs, *d))
        return *lhs - *q * *d;
      return CostPoly::constant((*d - 1) / 2);
    }
    return std::nullopt;
  }

  std::optional<CostPoly> dimSize(Value memref, int64_t i) {
    auto type = dyn_cast<MemRefType>(memref.getType());
    if (!type || i < 0 || i >= type.getRank())
      return std::nullopt;
    if (!type.isDynamicDim(i))
      return CostPoly::constant(static_cast<double>(type.getDimSize(i)));
    Operation *def = memref.getDefiningOp();
    if (!def)
      return leaf(memref, i);
    if (auto alloc = dyn_cast<memref::AllocOp>(def))
      return index(alloc.getDynamicSizes()[type.getDynamicDimIndex(i)]);
    if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
      return dimSize(cast.getSource(), i);
    if (auto view = dyn_cast_or_null<memref::ViewOp>(def))
      return index(view.getSizes()[type.getDynamicDimIndex(i)]);
    if (auto sub = dyn_cast_or_null<memref::SubViewOp>(def)) {
      // The result's dims are the sizes that are not dropped.
      llvm::SmallBitVector dropped = sub.getDroppedDims();
      int64_t seen = -1;
      for (auto [d, size] : llvm::enumerate(sub.getMixedSizes())) {
        if (dropped.test(d) || ++seen != i)
          continue;
        if (auto c = getConstantIntValue(size))
          return CostPoly::constant(static_cast<double>(*c));
        return index(cast<Value>(size));
      }
    }
    // Reshapes (graph.reshape's lowering): a dim of the expanded shape, or
    // the product of the collapsed ones.
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(def)) {
      OpFoldResult size = expand.getMixedOutputShape()[i];
      if (auto c = getConstantIntValue(size))
        return CostPoly::constant(static_cast<double>(*c));
      return index(cast<Value>(size));
    }
    if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def)) {
      CostPoly product = CostPoly::constant(1);
      for (int64_t d : collapse.getReassociationIndices()[i]) {
        std::optional<CostPoly> s = dimSize(collapse.getSrc(), d);
        if (!s)
          return std::nullopt;
        product = product * *s;
      }
      return product;
    }
    return std::nullopt;
  }

  /// An affine expression over polynomials.
  std::optional<CostPoly> affine(AffineExpr e, ArrayRef<CostPoly> dims,
                                 ArrayRef<CostPoly> symbols) {
    if (auto c = dyn_cast<AffineConstantExpr>(e))
      return CostPoly::constant(static_cast<double>(c.getValue()));
    if (auto d = dyn_cast<AffineDimExpr>(e))
      return dims[d.getPosition()];
    if (auto s = dyn_cast<AffineSymbolExpr>(e))
      return symbols[s.getPosition()];
    auto bin = cast<AffineBinaryOpExpr>(e);
    std::optional<CostPoly> l = affine(bin.getLHS(), dims, symbols);
    std::optional<CostPoly> r = affine(bin.getRHS(), dims, symbols);
    if (!l || !r)
      return std::nullopt;
    switch (e.getKind()) {
    case AffineExprKind::Add:
      return *l + *r;
    case AffineExprKind::Mul:
      return *l * *r;
    default:
      break;
    }
    std::optional<double> d = r->constantValue();
    if (!d || *d <= 0)
      return std::nullopt;
    if (e.getKind() == AffineExprKind::Mod)
      return CostPoly::constant((*d - 1) / 2);
    if (e.getKind() == AffineExprKind::CeilDiv)
      return (*l + CostPoly::constant(*d - 1)) * (1 / *d);
    return *l * (1 / *d);
  }

  /// The greatest (or least) value of `p` over the loops around the op
  /// being counted, innermost first: each variable at the end of its range
  /// its coefficient's sign (at the reference sizes) asks for.
  CostPoly extreme(CostPoly p, bool greatest) {
    for (const LoopRange &loop : llvm::reverse(loops)) {
      if (!p.dependsOn(loop.name))
        continue;
      SmallVector<CostPoly> parts = byPower(p, loop.name);
      bool up = parts.size() > 2 || parts[1].atReference() >= 0;
      p = p.substitute(loop.name, up == greatest ? loop.last : loop.first);
    }
    return p;
  }

  /// The bytes of the box, at most the buffer's whole size.
  CostPoly footprint(Value buffer, const Box &box) {
    auto type = cast<MemRefType>(buffer.getType());
    Type element = type.getElementType();
    double bytes = element.isIntOrFloat()
                       ? std::max(1u, element.getIntOrFloatBitWidth() / 8)
                       : 1;
    CostPoly p = CostPoly::constant(bytes);
    for (auto [d, lo, hi, count] : llvm::enumerate(box.lo, box.hi, box.count)) {
      CostPoly span = hi - lo + CostPoly::constant(1);
      bool counted = llvm::all_of(count.terms(),
                                  [](auto &term) { return term.second >= 0; });
      CostPoly n =
          counted && count.atReference() <= span.atReference() ? count : span;
      // The innermost dimension's run in whole lines (a transposed store
      // of one element per row moves a line per row), at most the row
      // (rows shorter than a line share lines: then the whole rows).
      std::optional<double> run = n.constantValue();
      if (d + 1 == box.lo.size() && run && !type.isDynamicDim(d)) {
        double line = static_cast<double>(target.cacheLine);
        double row = static_cast<double>(type.getDimSize(d));
        double lines = std::ceil(*run * bytes / line) * line / bytes;
        p = p * CostPoly::constant(row * bytes <= line ? row
                                                       : std::min(lines, row));
        continue;
      }
      p = p * n;
    }
    // A constant count beyond the buffer is the whole buffer (one that
    // grows with the sizes is left as it is: no reference size decides).
    if (type.hasStaticShape()) {
      double whole = bytes * static_cast<double>(type.getNumElements());
      std::optional<double> c = p.constantValue();
      if (c && *c > whole)
        return CostPoly::constant(whole);
    }
    return p;
  }

  void access(Value buffer, AffineMap map, ArrayRef<CostPoly> iters) {
    while (auto cast = buffer.getDefiningOp<memref::CastOp>())
      buffer = cast.getSource();
    if (inside(buffer))
      return; // the nest's own (stack) buffer
    Box box;
    for (AffineExpr e : map.getResults()) {
      std::optional<CostPoly> p = affine(e, iters, {});
      if (!p) {
        exact = false;
        return;
      }
      box.lo.push_back(extreme(*p, false));
      box.hi.push_back(extreme(*p, true));
      CostPoly count = CostPoly::constant(1);
      for (const LoopRange &loop : loops)
        if (p->dependsOn(loop.name))
          count = count * extreme(loop.count, true);
      box.count.push_back(count);
    }
    // Boxes that overlap in every dimension merge (the same data read at
    // neighbouring offsets: the span of both, and where they differ at
    // most the sum of their counts); others add (K and V in one cache
    // buffer). Merged boxes are merged again until none overlap.
    SmallVector<Box> &known = boxes[buffer];
    known.push_back(box);
    for (bool merged = true; merged;) {
      merged = false;
      for (size_t a = 0; a < known.size() && !merged; ++a)
        for (size_t b = a + 1; b < known.size() && !merged; ++b)
          if (overlap(known[a], known[b])) {
            known[a] = merge(known[a], known[b]);
            known.erase(known.begin() + b);
            merged = true;
          }
    }
  }

  static bool overlap(const Box &a, const Box &b) {
    for (unsigned d = 0; d < a.lo.size(); ++d)
      if (a.lo[d].atReference() > b.hi[d].atReference() ||
          b.lo[d].atReference() > a.hi[d].atReference())
        return false;
    return true;
  }

  static Box merge(const Box &a, const Box &b) {
    Box m;
    for (unsigned d = 0; d < a.lo.size(); ++d) {
      bool same = a.lo[d].atReference() == b.lo[d].atReference() &&
                  a.hi[d].atReference() == b.hi[d].atReference();
      m.lo.push_back(a.lo[d].atReference() <= b.lo[d].atReference() ? a.lo[d]
                                                                    : b.lo[d]);
      m.hi.push_back(a.hi[d].atReference() >= b.hi[d].atReference() ? a.hi[d]
                                                                    : b.hi[d]);
      CostPoly larger = a.count[d].atReference() >= b.count[d].atReference()
                            ? a.count[d]
                            : b.count[d];
      m.count.push_back(same ? larger : a.count[d] + b.count[d]);
    }
    return m;
  }

  /// The element width an arithmetic op works at.
  static unsigned width(Operation *op) {
    Type t = op->getNumResults() ? op->getResult(0).getType()
                                 : op->getOperand(0).getType();
    if (isa<arith::CmpIOp, arith::CmpFOp>(op))
      t = op->getOperand(0).getType();
    return t.isIntOrFloat() ? t.getIntOrFloatBitWidth() : 32;
  }

  Work block(BlockOp b, int64_t lanes) {
    SmallVector<CostPoly> iters;
    for (Value v : b.getIterValues()) {
      std::optional<CostPoly> p = index(v);
      if (!p) {
        exact = false;
        p = CostPoly::constant(0);
      }
      iters.push_back(*p);
    }
    for (auto [m, map] : llvm::zip(b.getReads(), b.getReadMaps()))
      access(m, cast<AffineMapAttr>(map).getValue(), iters);
    for (auto [m, map] : llvm::zip(b.getWrites(), b.getWriteMaps()))
      access(m, cast<AffineMapAttr>(map).getValue(), iters);

    // Sums of products of bytes: the add stands for the dot instruction,
    // the multiply and extensions feeding it take none of their own.
    DenseSet<Operation *> dotAdds, dotParts;
    b.getBody().walk([&](arith::AddIOp add) {
      for (Value o : add->getOperands()) {
        auto mul = o.getDefiningOp<arith::MulIOp>();
        if (!mul || !mul->hasOneUse())
          continue;
        SmallVector<Operation *> exts;
        for (Value m : mul->getOperands()) {
          Operation *ext = m.getDefiningOp();
          if (isa_and_nonnull<arith::ExtSIOp, arith::ExtUIOp>(ext) &&
              ext->getOperand(0).getType().isInteger(8) && ext->hasOneUse())
            exts.push_back(ext);
        }
        if (exts.size() != 2)
          continue;
        dotAdds.insert(add);
        dotParts.insert(mul);
        dotParts.insert(exts.begin(), exts.end());
        return;
      }
    });
    Work w;
    b.getBody().walk([&](Operation *op) {
      Dialect *dialect = op->getDialect();
      bool arith =
          isa_and_nonnull<arith::ArithDialect, math::MathDialect>(dialect);
      if (!arith || op->hasTrait<OpTrait::ConstantLike>() ||
          op->getNumOperands() == 0)
        return;
      Type t = op->getNumResults() ? op->getResult(0).getType() : Type();
      if (t && t.isIndex())
        return; // addressing
      if (dotParts.contains(op))
        return;
      bool dot = dotAdds.contains(op);
      unsigned bits = dot ? 8 : width(op);
      double instr =
          lanes <= 1
              ? 1.0
              : std::ceil(double(lanes) * bits / target.vectorBits) / lanes;
      if (dot && !target.int8Dot)
        instr *= 3;
      if (dot) {
        w.instructions += CostPoly::constant(instr);
        w.intOps += CostPoly::constant(2); // a multiply and an add
        return;
      }
      bool floating = isa<FloatType>(op->getOperand(0).getType()) ||
                      isa<math::MathDialect>(dialect);
      bool conversion =
          isa<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp,
              arith::FPToSIOp, arith::FPToUIOp, arith::BitcastOp,
              arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp>(op);
      // Float arithmetic and integer multiplies take the multiply-add
      // units; the rest issue on twice as many ports.
      bool multiplyAdd = (floating && !conversion) || isa<arith::MulIOp>(op);
      w.instructions +=
          CostPoly::constant(multiplyAdd ? instr : instr * kOtherIssueShare);
      if (conversion)
        return;
      if (floating)
        w.flops += CostPoly::constant(isa<math::FmaOp>(op) ? 2 : 1);
      else
        w.intOps += CostPoly::constant(1);
    });
    return w;
  }

  Work loop(ForOp f, int64_t lanes) {
    std::optional<CostPoly> lb = index(f.getLowerBound());
    std::optional<CostPoly> ub = index(f.getUpperBound());
    std::optional<CostPoly> step = index(f.getStep());
    std::optional<double> s = step ? step->constantValue() : std::nullopt;
    if (!lb || !ub || !s || *s <= 0) {
      exact = false;
      lb = CostPoly::constant(0);
      ub = CostPoly::constant(1);
      s = 1;
    }
    CostPoly count = (*ub - *lb) * (1 / *s);
    if (auto l = lb->constantValue())
      if (auto u = ub->constantValue())
        count = CostPoly::constant(std::max(0.0, std::ceil((*u - *l) / *s)));
    // Whether the nest runs at all: a loop stepping over tiles of a
    // dynamic extent (flash attention's positions) runs once for a part of
    // a tile, where its work is the part's (its tiles' extents, the full
    // tile but the last, add up to the extent: counted as extent / step
    // full tiles).
    if (f == nest)
      trips = *s > 1 && !count.constantValue()
                  ? (*ub - *lb + CostPoly::constant(*s - 1)) * (1 / *s)
                  : count;
    if (count.terms().empty())
      return {}; // never runs (a remainder the sizes leave empty)
    std::string name = "%i" + std::to_string(names.size());
    names[f.getInductionVar()] = name;
    loops.push_back({name, *lb, *ub - CostPoly::constant(*s), count});
    if (f.getKind() == LoopKind::parallel && !parallel)
      parallel = extreme(count, true);
    int64_t inner = lanes;
    if (f.getKind() == LoopKind::vectorized)
      if (std::optional<double> c = count.constantValue())
        inner = lanes * static_cast<int64_t>(*c);
    Work body = region(*f.getBody(), inner);
    loops.pop_back();

    // name = lb + s*k for k < count.
    std::string k = name + "k";
    CostPoly at = *lb + CostPoly::symbol(k) * *s;
    auto sum = [&](const CostPoly &p) {
      if (!p.dependsOn(name))
        return p * count;
      std::optional<CostPoly> r = p.substitute(name, at).sumOver(k, count);
      if (!r) {
        exact = false;
        return p.substitute(name, *lb) * count;
      }
      return *r;
    };
    return {sum(body.flops), sum(body.intOps), sum(body.instructions)};
  }

  Work region(Block &b, int64_t lanes) {
    Work w;
    for (Operation &o : b)
      w = w + op(&o, lanes);
    return w;
  }

  Work op(Operation *o, int64_t lanes) {
    if (auto f = dyn_cast<ForOp>(o))
      return loop(f, lanes);
    if (auto b = dyn_cast<BlockOp>(o))
      return block(b, lanes);
    return {};
  }

private:
  Operation *nest;
  CostTarget target;
  CostLeaf leaf;
  DenseMap<Value, std::string> names;
  SmallVector<LoopRange> loops;
  llvm::MapVector<Value, SmallVector<Box>> boxes;
  std::optional<CostPoly> parallel, trips;
  bool exact = true;
};

} // namespace

std::optional<CostPoly> llmc::tl::estimateIndex(Value v, CostLeaf leaf) {
  return Estimator(nullptr, {}, leaf).index(v);
}

std::optional<CostPoly> llmc::tl::estimateDim(Value memref, int64_t dim,
                                              CostLeaf leaf) {
  return Estimator(nullptr, {}, leaf).dimSize(memref, dim);
}

NestWork llmc::tl::estimateWork(Operation *nest, const CostTarget &target,
                                CostLeaf leaf) {
  return Estimator(nest, target, leaf).run();
}
