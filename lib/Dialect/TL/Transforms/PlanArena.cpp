//===- PlanArena.cpp - function-level buffers in one arena, by liveness ---===//
//
// Every intermediate of a forward call becomes a view into one byte buffer
// the caller owns (the runtime allocates it once and grows it), at an offset
// fixed at compile time: no malloc/free per call, and buffers whose live
// ranges do not overlap reuse the same (cache-warm) bytes.
//
// Sizes depend on the call's arguments (the prompt length, pos0), so sizes
// and offsets are polynomials in them, kept per monomial. Two buffers live
// at the same time are placed one after the other in *every* coefficient,
// which makes them disjoint for every value of the arguments.
//
//===----------------------------------------------------------------------===//
#include "Dialect/TL/Analysis/BufferLiveness.h"
#include "Dialect/TL/IR/TL.h"
#include "Dialect/TL/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/SymbolTable.h"

#include <map>

namespace llmc::tl {
#define GEN_PASS_DEF_TLPLANARENA
#include "Dialect/TL/Transforms/Passes.h.inc"
} // namespace llmc::tl

using namespace mlir;

namespace {

constexpr int64_t kAlignment = 64;
/// The value every argument takes when buffers are compared by size.
constexpr int64_t kReferenceValue = 256;
constexpr llvm::StringLiteral kArenaAttr = "llmc.arena";

/// An argument of the function as a size: an index argument (dim = -1) or
/// a dynamic dimension of a memref argument.
using Symbol = std::pair<unsigned, int64_t>;
/// A product of symbols, sorted (a repeated symbol is a power).
using Monomial = std::vector<Symbol>;
/// Bytes per monomial; zero coefficients are not stored.
using Poly = std::map<Monomial, int64_t>;

Poly constantPoly(int64_t c) {
  Poly p;
  if (c)
    p[{}] = c;
  return p;
}

Poly add(const Poly &a, const Poly &b) {
  Poly r = a;
  for (auto &[m, c] : b)
    r[m] += c;
  return r;
}

Poly mul(const Poly &a, const Poly &b) {
  Poly r;
  for (auto &[ma, ca] : a)
    for (auto &[mb, cb] : b) {
      Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      llvm::sort(m);
      r[m] += ca * cb;
    }
  return r;
}

int64_t coefficient(const Poly &p, const Monomial &m) {
  auto it = p.find(m);
  return it == p.end() ? 0 : it->second;
}

/// a <= b in every coefficient.
bool lessEqual(const Poly &a, const Poly &b) {
  return llvm::all_of(
      a, [&](auto &term) { return term.second <= coefficient(b, term.first); });
}

Poly maxOf(const Poly &a, const Poly &b) {
  Poly r = a;
  for (auto &[m, c] : b)
    r[m] = std::max(coefficient(a, m), c);
  return r;
}

int64_t referenceBytes(const Poly &p) {
  int64_t total = 0;
  for (auto &[m, c] : p) {
    int64_t v = c;
    for (size_t i = 0; i < m.size(); ++i)
      v *= kReferenceValue;
    total += v;
  }
  return total;
}

bool nonNegative(const Poly &p) {
  return llvm::all_of(p, [](auto &term) { return term.second >= 0; });
}

std::optional<Poly> symbolic(Value v, Block &entry);

/// `v` is exactly the polynomial `symbolic` gives: a sum of products of
/// constants, index arguments and dims of memref arguments.
bool isExact(Value v, Block &entry) {
  if (getConstantIntValue(v))
    return true;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == &entry;
  if (auto dim = v.getDefiningOp<memref::DimOp>()) {
    auto arg = dyn_cast<BlockArgument>(dim.getSource());
    return arg && arg.getOwner() == &entry;
  }
  Operation *op = v.getDefiningOp();
  return isa_and_nonnull<arith::AddIOp, arith::MulIOp>(op) &&
         isExact(op->getOperand(0), entry) && isExact(op->getOperand(1), entry);
}

/// Dimension `index` of the memref `m`, through the ops that give its sizes.
std::optional<Poly> dimSize(Value m, int64_t index, Block &entry) {
  auto type = dyn_cast<MemRefType>(m.getType());
  if (!type || index < 0 || index >= type.getRank())
    return std::nullopt;
  if (!type.isDynamicDim(index))
    return constantPoly(type.getDimSize(index));
  if (auto arg = dyn_cast<BlockArgument>(m)) {
    if (arg.getOwner() != &entry)
      return std::nullopt;
    return Poly{{Monomial{{arg.getArgNumber(), index}}, 1}};
  }
  Operation *op = m.getDefiningOp();
  auto dynamicOperand = [&](ValueRange sizes) -> std::optional<Poly> {
    return symbolic(sizes[type.getDynamicDimIndex(index)], entry);
  };
  if (auto alloc = dyn_cast_or_null<memref::AllocOp>(op))
    return dynamicOperand(alloc.getDynamicSizes());
  if (auto view = dyn_cast_or_null<memref::ViewOp>(op))
    return dynamicOperand(view.getSizes());
  if (auto cast = dyn_cast_or_null<memref::CastOp>(op))
    return dimSize(cast.getSource(), index, entry);
  if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(op)) {
    OpFoldResult size = expand.getMixedOutputShape()[index];
    if (auto value = dyn_cast<Value>(size))
      return symbolic(value, entry);
    return constantPoly(*getConstantIntValue(size));
  }
  if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(op)) {
    Poly product = constantPoly(1);
    for (int64_t source : collapse.getReassociationIndices()[index]) {
      std::optional<Poly> d = dimSize(collapse.getSrc(), source, entry);
      if (!d)
        return std::nullopt;
      product = mul(product, *d);
    }
    return product;
  }
  return std::nullopt;
}

/// An upper bound of `v` as a polynomial in the arguments of `entry`, when
/// there is one; exact where `v` is a sum of products. Index arguments are
/// sizes and positions, never negative, so every polynomial with
/// non-negative coefficients is too; unsigned divisions, remainders, minima
/// and maxima of such values, and their differences with exact ones, are
/// bounded by one.
std::optional<Poly> symbolic(Value v, Block &entry) {
  if (std::optional<int64_t> c = getConstantIntValue(v))
    return constantPoly(*c);
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != &entry || !arg.getType().isIndex())
      return std::nullopt;
    return Poly{{Monomial{{arg.getArgNumber(), -1}}, 1}};
  }
  if (auto dim = v.getDefiningOp<memref::DimOp>()) {
    std::optional<int64_t> index = dim.getConstantIndex();
    if (!index)
      return std::nullopt;
    return dimSize(dim.getSource(), *index, entry);
  }
  Operation *op = v.getDefiningOp();
  // (x / d) * d <= x: rounding down to a multiple (after adding d - 1: up).
  if (auto mulOp = dyn_cast_or_null<arith::MulIOp>(op)) {
    for (unsigned i = 0; i < 2; ++i) {
      auto div = mulOp.getOperand(i).getDefiningOp<arith::DivUIOp>();
      std::optional<int64_t> d = getConstantIntValue(mulOp.getOperand(1 - i));
      if (div && d && *d > 0 && getConstantIntValue(div.getRhs()) == d) {
        std::optional<Poly> x = symbolic(div.getLhs(), entry);
        if (x && nonNegative(*x))
          return x;
      }
    }
  }
  if (!op || op->getNumOperands() != 2 ||
      !isa<arith::AddIOp, arith::MulIOp, arith::SubIOp, arith::DivUIOp,
           arith::CeilDivUIOp, arith::RemUIOp, arith::MinUIOp, arith::MaxUIOp>(
          op))
    return std::nullopt;
  auto lhs = symbolic(op->getOperand(0), entry);
  auto rhs = symbolic(op->getOperand(1), entry);
  if (!lhs || !rhs)
    return std::nullopt;
  if (isa<arith::AddIOp>(op))
    return add(*lhs, *rhs);
  if (isa<arith::MulIOp>(op))
    return mul(*lhs, *rhs);
  // The rest bounds non-negative operands only.
  if (!nonNegative(*lhs) || !nonNegative(*rhs))
    return std::nullopt;
  if (isa<arith::SubIOp>(op)) {
    // x - y <= x where y >= 0: y's polynomial must be y itself, not a bound.
    if (!isExact(op->getOperand(1), entry))
      return std::nullopt;
    return lhs;
  }
  if (isa<arith::MaxUIOp>(op))
    return maxOf(*lhs, *rhs);
  if (isa<arith::MinUIOp>(op)) {
    // Either side bounds it: a constant one if there is (a size capped at
    // the context makes a fixed-size buffer), else the smaller.
    auto isConstant = [](const Poly &p) {
      return p.empty() || (p.size() == 1 && p.begin()->first.empty());
    };
    if (isConstant(*rhs) != isConstant(*lhs))
      return isConstant(*rhs) ? rhs : lhs;
    return referenceBytes(*rhs) < referenceBytes(*lhs) ? rhs : lhs;
  }
  std::optional<int64_t> divisor = getConstantIntValue(op->getOperand(1));
  if (!divisor || *divisor <= 0)
    return std::nullopt;
  if (isa<arith::RemUIOp>(op))
    return constantPoly(*divisor - 1);
  // x / d <= the sum of each term's coefficient / d, rounded up.
  Poly quotient;
  for (auto &[m, c] : *lhs)
    quotient[m] = llvm::divideCeil(c, *divisor);
  return quotient;
}

/// The bytes of `alloc`, each coefficient rounded up to the alignment, when
/// they are a polynomial with non-negative coefficients.
std::optional<Poly> allocBytes(memref::AllocOp alloc, Block &entry) {
  MemRefType type = alloc.getType();
  Type element = type.getElementType();
  if (!type.getLayout().isIdentity() || type.getMemorySpace() ||
      !element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8)
    return std::nullopt;
  Poly bytes = constantPoly(element.getIntOrFloatBitWidth() / 8);
  auto dynamic = alloc.getDynamicSizes().begin();
  for (int64_t size : type.getShape()) {
    if (!ShapedType::isDynamic(size)) {
      bytes = mul(bytes, constantPoly(size));
      continue;
    }
    std::optional<Poly> p = symbolic(*dynamic++, entry);
    if (!p)
      return std::nullopt;
    bytes = mul(bytes, *p);
  }
  for (auto &[m, c] : bytes) {
    if (c < 0)
      return std::nullopt;
    c = llvm::alignTo(c, kAlignment);
  }
  return bytes;
}

struct Buffer {
  memref::AllocOp alloc;
  Poly bytes;
  Poly offset;
  // Indices of the first and last top-level ops using it; unused buffers
  // overlap nothing.
  unsigned first = 0, last = 0;
  bool used = false;

  Poly end() const { return add(offset, bytes); }
  bool overlaps(const Buffer &o) const {
    return used && o.used && first <= o.last && o.first <= last;
  }
};

/// Places `buffers`: each at the lowest end (at the reference size) that
/// keeps it below or above, in every coefficient, each buffer placed before
/// it and live at the same time. Returns the bytes they span.
Poly place(MutableArrayRef<Buffer> buffers) {
  auto order = llvm::to_vector(llvm::seq<unsigned>(0, buffers.size()));
  llvm::sort(order, [&](unsigned a, unsigned b) {
    int64_t sa = referenceBytes(buffers[a].bytes);
    int64_t sb = referenceBytes(buffers[b].bytes);
    return sa != sb ? sa > sb : a < b;
  });
  SmallVector<unsigned> placed;
  Poly peak;
  for (unsigned i : order) {
    Buffer &b = buffers[i];
    SmallVector<const Buffer *> live;
    for (unsigned j : placed)
      if (b.overlaps(buffers[j]))
        live.push_back(&buffers[j]);
    SmallVector<Poly> candidates = {Poly()};
    for (const Buffer *o : live)
      candidates.push_back(o->end());
    std::optional<Poly> best;
    int64_t bestEnd = 0;
    for (Poly pos : candidates) {
      // Move above every buffer it would touch, until it touches none.
      for (bool moved = true; moved;) {
        moved = false;
        for (const Buffer *o : live) {
          if (lessEqual(add(pos, b.bytes), o->offset) ||
              lessEqual(o->end(), pos))
            continue;
          pos = maxOf(pos, o->end());
          moved = true;
        }
      }
      int64_t end = referenceBytes(add(pos, b.bytes));
      if (!best || end < bestEnd) {
        best = pos;
        bestEnd = end;
      }
    }
    b.offset = *best;
    peak = maxOf(peak, b.end());
    placed.push_back(i);
  }
  return peak;
}

std::string symbolName(Symbol s) {
  std::string name = "arg" + std::to_string(s.first);
  if (s.second >= 0)
    name += "." + std::to_string(s.second);
  return name;
}

/// A plan as an attribute: [{bytes = N, of = ["arg0.0", ...]}, ...].
ArrayAttr planAttr(MLIRContext *ctx, const Poly &p) {
  Builder b(ctx);
  SmallVector<Attribute> terms;
  for (auto &[m, c] : p) {
    if (!c)
      continue;
    SmallVector<Attribute> of;
    for (Symbol s : m)
      of.push_back(b.getStringAttr(symbolName(s)));
    terms.push_back(
        b.getDictionaryAttr({b.getNamedAttr("bytes", b.getI64IntegerAttr(c)),
                             b.getNamedAttr("of", b.getArrayAttr(of))}));
  }
  return b.getArrayAttr(terms);
}

/// Builds index values of polynomials at the start of a function.
class PolyBuilder {
public:
  PolyBuilder(Block &entry, Location loc)
      : b(OpBuilder::atBlockBegin(&entry)), entry(entry), loc(loc) {}

  Value build(const Poly &p) {
    Value sum;
    for (auto &[m, c] : p) {
      if (!c)
        continue;
      Value term = constant(c);
      if (!m.empty())
        term = arith::MulIOp::create(b, loc, monomial(m), term);
      sum = sum ? arith::AddIOp::create(b, loc, sum, term).getResult() : term;
    }
    return sum ? sum : constant(0);
  }

private:
  Value constant(int64_t c) {
    Value &v = constants[c];
    if (!v)
      v = arith::ConstantIndexOp::create(b, loc, c);
    return v;
  }
  Value monomial(const Monomial &m) {
    auto it = monomials.find(m);
    if (it != monomials.end())
      return it->second;
    Value v = symbol(m.front());
    for (Symbol s : ArrayRef(m).drop_front())
      v = arith::MulIOp::create(b, loc, v, symbol(s));
    return monomials[m] = v;
  }
  Value symbol(Symbol s) {
    Value arg = entry.getArgument(s.first);
    if (s.second < 0)
      return arg;
    Value &dim = dims[s];
    if (!dim)
      dim = memref::DimOp::create(b, loc, arg, s.second);
    return dim;
  }

  OpBuilder b;
  Block &entry;
  Location loc;
  std::map<Monomial, Value> monomials;
  std::map<Symbol, Value> dims;
  std::map<int64_t, Value> constants;
};

struct FunctionPlan {
  SmallVector<Buffer> buffers;
  Poly own;                // the bytes of the function's own buffers
  SmallVector<Poly> plans; // including its callees'
  bool visiting = false, done = false;
};

struct TLPlanArenaPass : llmc::tl::impl::TLPlanArenaBase<TLPlanArenaPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.getBody().hasOneBlock())
        collect(func, plans[func]);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (failed(finish(func)))
        return signalPassFailure();
  }

  /// The buffers of `func` that can live in the arena, placed.
  void collect(func::FuncOp func, FunctionPlan &plan) {
    Block &entry = func.getBody().front();
    DenseMap<Operation *, unsigned> index;
    for (auto [i, op] : llvm::enumerate(entry))
      index[&op] = i;
    for (auto alloc : entry.getOps<memref::AllocOp>()) {
      llmc::tl::BufferLiveRange range =
          llmc::tl::topLevelLiveRange(alloc, entry);
      if (range.escapes)
        continue;
      std::optional<Poly> bytes = allocBytes(alloc, entry);
      if (!bytes)
        continue;
      Buffer b{alloc, *bytes, {}};
      if (range.first) {
        b.used = true;
        b.first = index[range.first];
        b.last = index[range.last];
      }
      plan.buffers.push_back(std::move(b));
    }
    plan.own = place(plan.buffers);
  }

  /// Gives `func` its arena (after its callees'), its views and plans.
  LogicalResult finish(func::FuncOp func) {
    FunctionPlan &plan = plans[func];
    if (plan.done || func.isExternal() || !func.getBody().hasOneBlock())
      return success();
    if (plan.visiting)
      return func.emitError("tl-plan-arena: recursive call to @")
             << func.getSymName();
    plan.visiting = true;
    // The calls whose callee needs an arena.
    SmallVector<std::pair<func::CallOp, func::FuncOp>> calls;
    WalkResult walk = func.walk([&](func::CallOp call) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (!callee)
        return WalkResult::advance();
      if (failed(finish(callee)))
        return WalkResult::interrupt();
      if (arenaArgument(callee))
        calls.push_back({call, callee});
      return WalkResult::advance();
    });
    plan.visiting = false;
    if (walk.wasInterrupted())
      return failure();
    plan.done = true;
    if (plan.buffers.empty() && calls.empty() && !func.isPublic())
      return success();

    Block &entry = func.getBody().front();
    BlockArgument arena = arenaArgument(func);
    if (!arena) {
      MLIRContext *ctx = func.getContext();
      unsigned n = func.getNumArguments();
      if (failed(func.insertArgument(
              n,
              MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8)),
              DictionaryAttr::get(
                  ctx, {NamedAttribute(StringAttr::get(ctx, kArenaAttr),
                                       UnitAttr::get(ctx))}),
              func.getLoc())))
        return func.emitError("tl-plan-arena: cannot add the arena argument");
      arena = entry.getArgument(n);
    }

    PolyBuilder polys(entry, func.getLoc());
    for (Buffer &b : plan.buffers) {
      OpBuilder builder(b.alloc);
      Value view = memref::ViewOp::create(
          builder, b.alloc.getLoc(), b.alloc.getType(), arena,
          polys.build(b.offset), b.alloc.getDynamicSizes());
      b.alloc.replaceAllUsesWith(view);
      b.alloc.erase();
    }

    // Callees get the arena past this function's own buffers.
    Value calleeArena = arena;
    if (!plan.own.empty() && !calls.empty()) {
      OpBuilder builder = OpBuilder::atBlockBegin(&entry);
      Value start = polys.build(plan.own);
      builder.setInsertionPointAfterValue(start);
      Value size = memref::DimOp::create(builder, func.getLoc(), arena, 0);
      Value rest = arith::SubIOp::create(builder, func.getLoc(), size, start);
      calleeArena =
          memref::ViewOp::create(builder, func.getLoc(), arena.getType(), arena,
                                 start, ValueRange{rest});
    }
    for (auto [call, callee] : calls) {
      // The callee's plans, in this function's arguments.
      for (const Poly &p : plans[callee].plans) {
        Poly mapped;
        for (auto &[m, c] : p) {
          Monomial renamed;
          for (Symbol s : m) {
            auto arg = dyn_cast<BlockArgument>(call.getOperand(s.first));
            if (!arg || arg.getOwner() != &entry)
              return call.emitError("tl-plan-arena: cannot size the arena of @")
                     << callee.getSymName() << " here: its operand #" << s.first
                     << " is not an argument of @" << func.getSymName();
            renamed.push_back({arg.getArgNumber(), s.second});
          }
          llvm::sort(renamed);
          mapped[renamed] += c;
        }
        Poly total = add(plan.own, mapped);
        if (!llvm::is_contained(plan.plans, total))
          plan.plans.push_back(total);
      }
      call->insertOperands(call->getNumOperands(), calleeArena);
    }
    if (calls.empty())
      plan.plans.push_back(plan.own);
    SmallVector<Attribute> attrs;
    for (const Poly &p : plan.plans)
      attrs.push_back(planAttr(func.getContext(), p));
    func->setAttr(kArenaAttr, ArrayAttr::get(func.getContext(), attrs));
    return success();
  }

  static BlockArgument arenaArgument(func::FuncOp func) {
    if (func.isExternal())
      return {};
    for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
      if (func.getArgAttr(i, kArenaAttr))
        return func.getArgument(i);
    return {};
  }

  std::map<Operation *, FunctionPlan> plans; // references stay valid
};

} // namespace
