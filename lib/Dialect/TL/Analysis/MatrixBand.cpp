//===- MatrixBand.cpp - a matmul band for a GPU's matrix units ------------===//
#include "Dialect/TL/Analysis/MatrixBand.h"
#include "Dialect/TL/Analysis/AffineIndex.h"
#include "Dialect/TL/Analysis/Reduction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

using namespace mlir;
using namespace llmc::tl;

/// The one op with a region in `loop`'s body (everything else pure), or
/// null.
static Operation *onlyNested(ForOp loop) {
  Operation *inner = nullptr;
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions()) {
      if (inner)
        return nullptr;
      inner = &op;
      continue;
    }
    if (!isPure(&op))
      return nullptr;
  }
  return inner;
}

/// The extent of `loop` when it runs from 0 with step 1 to a constant
/// multiple of kMatrixTile.
static std::optional<int64_t> tileExtent(ForOp loop) {
  std::optional<int64_t> ub = getConstantIntValue(loop.getUpperBound());
  if (getConstantIntValue(loop.getLowerBound()) != 0 ||
      getConstantIntValue(loop.getStep()) != 1 || !ub || *ub <= 0 ||
      *ub % kMatrixTile)
    return std::nullopt;
  return ub;
}

/// The f16 value `v` widened to f32 was loaded from: the load, or null.
static affine::AffineLoadOp widenedF16Load(Value v) {
  auto ext = v.getDefiningOp<arith::ExtFOp>();
  if (!ext || !ext.getIn().getType().isF16() || !ext.getType().isF32())
    return {};
  return ext.getIn().getDefiningOp<affine::AffineLoadOp>();
}

FailureOr<MatrixBand>
llmc::tl::matchMatrixBand(ForOp rows,
                          llvm::function_ref<void(const Twine &)> why,
                          bool anyRowCount, bool f32Rows) {
  auto fail = [&](const Twine &reason) -> FailureOr<MatrixBand> {
    if (why)
      why(reason);
    return failure();
  };
  MatrixBand band;
  band.rows = rows;
  band.cols = dyn_cast_or_null<ForOp>(onlyNested(rows));
  band.red =
      band.cols ? dyn_cast_or_null<ForOp>(onlyNested(band.cols)) : ForOp();
  band.block =
      band.red ? dyn_cast_or_null<BlockOp>(onlyNested(band.red)) : BlockOp();
  if (!band.block)
    return fail("a matrix band is three directly nested loops (rows, "
                "columns, the reduction) around one block");
  bool normalisedRows = getConstantIntValue(rows.getLowerBound()) == 0 &&
                        getConstantIntValue(rows.getStep()) == 1;
  std::optional<int64_t> extents[] = {
      anyRowCount && normalisedRows ? tileExtent(rows).value_or(0)
                                    : tileExtent(rows),
      tileExtent(band.cols), tileExtent(band.red)};
  if (!extents[0] || !extents[1] || !extents[2])
    return fail(Twine("each loop of a matrix band must run from 0 with step "
                      "1 to a constant multiple of ") +
                Twine(kMatrixTile));
  band.rowCount = *extents[0];
  band.colCount = *extents[1];
  band.redCount = *extents[2];

  // out += ext(a) * ext(b), as an add of a product or an fma.
  BlockOp block = band.block;
  FailureOr<ReductionUpdate> update = matchReductionUpdate(block);
  if (failed(update) || update->kind != arith::AtomicRMWKind::addf ||
      !update->load.getType().isF32())
    return fail("the block must add into an f32 accumulator");
  // The products: x * y (a mulf or an fma), or x * y + x2 * y2 where y
  // and y2 load the same element of one buffer (the rows' operand held as
  // the sum of two f16 halves: x + x2), or x * y + (x2 * y2 + x3 * y3) *
  // 2^-11 where also x3 loads x's element (both operands split: y + y3;
  // dequant_halves).
  Value x, y, x2, y2, x3, y3;
  auto product = [](Value v, Value &l, Value &r) {
    auto mul = v ? v.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
    if (mul) {
      l = mul.getLhs();
      r = mul.getRhs();
    }
    return bool(mul);
  };
  if (update->fma) {
    auto fma = cast<math::FmaOp>(update->combine);
    x = fma.getA();
    y = fma.getB();
  } else if (!product(update->operand, x, y)) {
    // x * y + (x2 * y2) * 2^-11, the scale constant on either side.
    auto scaled = [&](Value v) -> Value {
      auto mul = v.getDefiningOp<arith::MulFOp>();
      if (!mul)
        return {};
      for (auto [p, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                          std::pair(mul.getRhs(), mul.getLhs())}) {
        auto k = c.getDefiningOp<arith::ConstantOp>();
        auto f = k ? dyn_cast<FloatAttr>(k.getValue()) : FloatAttr();
        if (f && f.getValueAsDouble() == 1.0 / kLowHalfScale)
          return p;
      }
      return {};
    };
    auto add = update->operand.getDefiningOp<arith::AddFOp>();
    Value low = add ? scaled(add.getRhs()) : Value();
    auto lows = low ? low.getDefiningOp<arith::AddFOp>() : arith::AddFOp();
    if (lows &&
        !(product(lows.getLhs(), x2, y2) && product(lows.getRhs(), x3, y3)))
      x2 = y2 = x3 = y3 = Value();
    if (!add || !low || !product(add.getLhs(), x, y) ||
        (!lows && !product(low, x2, y2)) || (lows && !x3))
      x = y = x2 = y2 = x3 = y3 = Value();
  }
  auto load = [&](Value v) -> affine::AffineLoadOp {
    if (!v)
      return {};
    if (auto l = widenedF16Load(v))
      return l;
    // An f32 operand of the rows, to be split into halves by the caller.
    auto l = v.getDefiningOp<affine::AffineLoadOp>();
    return f32Rows && !x2 && l && l.getType().isF32() ? l
                                                      : affine::AffineLoadOp();
  };
  affine::AffineLoadOp loadX = load(x), loadY = load(y);
  affine::AffineLoadOp loadX2 = load(x2), loadY2 = load(y2);
  affine::AffineLoadOp loadX3 = load(x3), loadY3 = load(y3);
  Block *body = block.getBodyBlock();
  auto over = [&](affine::AffineLoadOp l) {
    return accessOverIters(l.getAffineMap(), l.getMapOperands(), body);
  };
  // The same element of the same buffer.
  auto same = [&](affine::AffineLoadOp p, affine::AffineLoadOp q) {
    return p && q && p.getMemRef() == q.getMemRef() && succeeded(over(p)) &&
           succeeded(over(q)) && *over(p) == *over(q);
  };
  if (x3) {
    // Both split: the product sharing y's element second, x2 * y2 with y2
    // y's element and x3 * y3 with x3 x's.
    if (!(loadX && loadY && loadX2 && loadY2 && loadX3 && loadY3))
      return fail("the block must add the product of two f16 values widened "
                  "to f32 (or such products of split operands)");
    if (same(loadX2, loadX) || same(loadY2, loadX)) {
      std::swap(loadX2, loadX3);
      std::swap(loadY2, loadY3);
    }
    if (same(loadX2, loadY))
      std::swap(loadX2, loadY2);
    if (same(loadY3, loadX))
      std::swap(loadX3, loadY3);
    if (!same(loadY2, loadY) || !same(loadX3, loadX) ||
        loadX2.getMemRef() == loadX.getMemRef() ||
        loadY3.getMemRef() == loadY.getMemRef() || failed(over(loadX2)) ||
        failed(over(loadY3)) || *over(loadX2) != *over(loadX) ||
        *over(loadY3) != *over(loadY))
      return fail("the block's split products must be x * y + (xl * y + x * "
                  "yl) * 2^-11, each low half read at its high half's "
                  "element");
  } else if (x2 && loadX && loadY && loadX2 && loadY2) {
    // The shared operand second in both products.
    if (loadX.getMemRef() == loadX2.getMemRef() ||
        loadX.getMemRef() == loadY2.getMemRef())
      std::swap(loadX, loadY);
    if (loadY.getMemRef() != loadY2.getMemRef())
      std::swap(loadX2, loadY2);
  }
  if (!loadX || !loadY || (x2 && (!loadX2 || !loadY2)) ||
      (x2 && !x3 &&
       (loadY.getMemRef() != loadY2.getMemRef() ||
        loadX.getMemRef() == loadX2.getMemRef() || failed(over(loadY)) ||
        failed(over(loadY2)) || *over(loadY) != *over(loadY2) ||
        failed(over(loadX)) || failed(over(loadX2)) ||
        *over(loadX) != *over(loadX2))))
    return fail("the block must add the product of two f16 values widened "
                "to f32 (or two such products sharing one factor, the second "
                "scaled by 2^-11)");
  FailureOr<AffineMap> mapX = over(loadX), mapY = over(loadY);
  FailureOr<AffineMap> mapOut = accessOverIters(
      update->store.getAffineMap(), update->store.getMapOperands(), body);
  if (failed(mapX) || failed(mapY) || failed(mapOut))
    return fail("the block's accesses must index by its iteration variables");

  // Each access as expressions of the band's loop variables (and values
  // from outside the band).
  AffineIndexBuilder ib(rows.getOperation());
  auto compose = [&](AffineMap m) {
    return ib.compose(m, block.getIterValues());
  };
  auto ex = compose(*mapX), ey = compose(*mapY), eo = compose(*mapOut);
  if (!ex || !ey || !eo)
    return fail("the block's indices must be affine in the band's loops");
  Value ivs[] = {rows.getInductionVar(), band.cols.getInductionVar(),
                 band.red.getInductionVar()};
  // The coefficient of each band loop in `e` (0 where unused), and whether
  // the rest (other loops, outside values, the constant) keeps multiples
  // of `align`.
  auto coefficients = [&](AffineExpr e) -> std::optional<SmallVector<int64_t>> {
    SmallVector<int64_t> c;
    unsigned n = ib.dims.size();
    for (Value iv : ivs) {
      auto at = llvm::find(ib.dims, iv);
      if (at == ib.dims.end()) {
        c.push_back(0);
        continue;
      }
      std::optional<int64_t> k = linearCoefficient(e, at - ib.dims.begin(), n);
      if (!k)
        return std::nullopt;
      c.push_back(*k);
    }
    return c;
  };
  // The rest of `e` once the band's loops are 0 must be a multiple of
  // `align` (a fragment's origin): each other dim's coefficient and the
  // constant.
  auto originAligned = [&](AffineExpr e, int64_t align) {
    unsigned n = ib.dims.size();
    for (unsigned d = 0; d < n; ++d) {
      if (llvm::is_contained(ivs, ib.dims[d]))
        continue;
      std::optional<int64_t> k = linearCoefficient(e, d, n);
      if (!k || *k % align)
        return false;
    }
    SmallVector<AffineExpr> zeros(n,
                                  getAffineConstantExpr(0, rows.getContext()));
    auto c = dyn_cast<AffineConstantExpr>(e.replaceDims(zeros));
    return c && c.getValue() % align == 0;
  };
  // (dim -2, dim -1): the row and column loops' coefficients in each;
  // every leading dim uses no band loop.
  auto fits = [&](ArrayRef<AffineExpr> e, ArrayRef<int64_t> second,
                  ArrayRef<int64_t> last) {
    if (e.size() < 2)
      return false;
    for (AffineExpr lead : e.drop_back(2))
      if (coefficients(lead) != SmallVector<int64_t>{0, 0, 0})
        return false;
    return coefficients(e[e.size() - 2]) == SmallVector<int64_t>(second) &&
           coefficients(e.back()) == SmallVector<int64_t>(last);
  };
  // `x` and `y` are a and b in either order (a varies with the rows, b
  // with the columns).
  auto roles = [&] {
    return fits(*ex, {1, 0, 0}, {0, 0, 1}) && fits(*ey, {0, 1, 0}, {0, 0, 1});
  };
  if (!roles() && (!x2 || x3)) {
    std::swap(loadX, loadY);
    std::swap(mapX, mapY);
    std::swap(ex, ey);
    // (Both split: the low halves trade places with them.)
    std::swap(loadX2, loadY3);
  }
  if (!roles() || !fits(*eo, {1, 0, 0}, {0, 1, 0}))
    return fail("the operands must be a[rows][k], b[columns][k] and "
                "out[rows][columns] in their last two dimensions, each "
                "index the band's loop plus an offset");
  band.a = loadX.getMemRef();
  band.aLow = loadX2 ? loadX2.getMemRef() : Value();
  band.bLow = loadY3 ? loadY3.getMemRef() : Value();
  band.b = loadY.getMemRef();
  band.out = update->store.getMemRef();
  band.aMap = *mapX;
  band.bMap = *mapY;
  band.outMap = *mapOut;
  // (Only a's values may be f32, and only where the caller splits them.)
  auto elementOf = [](Value v) {
    return cast<MemRefType>(v.getType()).getElementType();
  };
  if (!elementOf(band.b).isF16() ||
      !(elementOf(band.a).isF16() || (f32Rows && elementOf(band.a).isF32())))
    return fail("the block must add the product of two f16 values widened "
                "to f32 (or two such products sharing one factor)");

  // Layouts: rows of unit stride, a constant stride between them, and
  // fragments whose first element is kMatrixAlignment-aligned (the
  // buffers' bases are at least that).
  auto lead = [&](Value v, ArrayRef<AffineExpr> e,
                  int64_t &out) -> LogicalResult {
    auto type = cast<MemRefType>(v.getType());
    // (An f32 operand to be split is checked as its f16 halves will be:
    // shaped and indexed alike.)
    int64_t bytes =
        type.getElementType().isF32() && v == loadX.getMemRef() && f32Rows
            ? 2
            : type.getElementTypeBitWidth() / 8;
    int64_t align = kMatrixAlignment / bytes;
    SmallVector<int64_t> strides;
    int64_t offset;
    if (failed(type.getStridesAndOffset(strides, offset)) ||
        strides.back() != 1 || ShapedType::isDynamic(offset) || offset % align)
      return failure();
    for (unsigned d = 0; d + 1 < strides.size(); ++d)
      if (ShapedType::isDynamic(strides[d]) ||
          (d + 2 < strides.size() && strides[d] % align))
        return failure();
    out = strides[strides.size() - 2];
    // WMMA's leading dimension: a multiple of 16 bytes; each fragment's
    // origin aligned (rows at multiples of 16 then start aligned too).
    if ((out * bytes) % 16 || !originAligned(e.back(), align))
      return failure();
    return success(originAligned(e[e.size() - 2], kMatrixTile) ||
                   (out % align == 0 && originAligned(e[e.size() - 2], 1)));
  };
  int64_t lowLead = 0, bLowLead = 0;
  if (failed(lead(band.a, *ex, band.aLead)) ||
      (band.aLow &&
       (failed(lead(band.aLow, *ex, lowLead)) || lowLead != band.aLead)) ||
      failed(lead(band.b, *ey, band.bLead)) ||
      (band.bLow &&
       (failed(lead(band.bLow, *ey, bLowLead)) || bLowLead != band.bLead)) ||
      failed(lead(band.out, *eo, band.outLead)))
    return fail(Twine("each operand's rows must have unit stride, a constant "
                      "stride between them of a multiple of 16 bytes, and "
                      "fragments starting at ") +
                Twine(kMatrixAlignment) + "-byte multiples");

  // The sums start at zero (an init storing 0.0, which runs at the band's
  // first step: the reduction's only variable is the band's loop, from 0)
  // or at out's values (no init).
  if (Block *init = block.getInitBlock()) {
    unsigned reductions = 0;
    for (unsigned i = 0, e = block.getNumIters(); i < e; ++i) {
      if (block.getIterKind(i) != IterKind::reduce)
        continue;
      ++reductions;
      auto k = ib.build(block.getIterValues()[i]);
      if (!k || coefficients(*k) != SmallVector<int64_t>{0, 0, 1} ||
          !originAligned(*k, std::numeric_limits<int64_t>::max()))
        return fail("a block with an init must reduce over the band's "
                    "reduction loop alone, from 0");
    }
    // One store (besides constants, and the load of what it stores): 0, or
    // an element of a buffer at out's element (a residual added into the
    // product's init: the sums start there).
    affine::AffineStoreOp store;
    affine::AffineLoadOp from;
    bool onlyStore = reductions == 1;
    for (Operation &op : init->without_terminator()) {
      if (auto s = dyn_cast<affine::AffineStoreOp>(op); s && !store)
        store = s;
      else if (auto l = dyn_cast<affine::AffineLoadOp>(op); l && !from)
        from = l;
      else if (!isa<arith::ConstantOp>(op))
        onlyStore = false;
    }
    auto over = [&](Operation *access) -> FailureOr<AffineMap> {
      if (auto l = dyn_cast_or_null<affine::AffineLoadOp>(access))
        return accessOverIters(l.getAffineMap(), l.getMapOperands(), init);
      if (auto st = dyn_cast_or_null<affine::AffineStoreOp>(access))
        return accessOverIters(st.getAffineMap(), st.getMapOperands(), init);
      return failure();
    };
    auto zero = store
                    ? store.getValueToStore().getDefiningOp<arith::ConstantOp>()
                    : arith::ConstantOp();
    auto value = zero ? dyn_cast<FloatAttr>(zero.getValue()) : FloatAttr();
    FailureOr<AffineMap> at = over(store);
    bool fromBuffer = from && store && store.getValueToStore() == from &&
                      from.getMemRef() != band.out && succeeded(over(from)) &&
                      *over(from) == band.outMap;
    if (!onlyStore ||
        !(fromBuffer || (value && value.getValue().isZero() && !from)) ||
        store.getMemRef() != band.out || failed(at) || *at != band.outMap)
      return fail("the block's init must store 0, or another buffer's "
                  "element, into its accumulator");
    if (fromBuffer) {
      band.initFrom = from.getMemRef();
      if (failed(lead(band.initFrom, *eo, band.initLead)))
        return fail(Twine("each operand's rows must have unit stride, a "
                          "constant stride between them of a multiple of 16 "
                          "bytes, and fragments starting at ") +
                    Twine(kMatrixAlignment) + "-byte multiples");
    } else {
      band.zeroInit = true;
    }
  }
  return band;
}
