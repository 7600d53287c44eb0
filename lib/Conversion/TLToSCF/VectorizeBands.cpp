//===- VectorizeBands.cpp - vectorized tl loops to the vector dialect -----===//
//
// A band of directly nested `vectorized` loops (constant extents) becomes
// straight-line vector code: one SIMD lane per iteration, row-major over the
// band (the innermost loop fastest). Every value computed in the band is
// widened: values that do not depend on the band stay scalar; arithmetic on
// lanes becomes arithmetic on vectors; a block's access becomes a
// vector.load/store when its elements are contiguous across the lanes it
// depends on (replicated with a shuffle across the others), a scalar load
// when it depends on no lane, and one scalar access per lane otherwise.
//
// A band may end in loops that bind reduction variables (a group
// reduction: the products of a dot-product group, say): the lanes of those
// loops are reduced into the lanes of the others with vector.multi_reduction,
// which the target lowers (on x86 with VNNI, int8 groups of four become
// vpdpbusd).
//
//===----------------------------------------------------------------------===//
#include "Conversion/TLToSCF/TLToSCF.h"
#include "Dialect/TL/Analysis/AffineIndex.h"
#include "Dialect/TL/Analysis/Reduction.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

#include <numeric>

using namespace mlir;
using namespace llmc;
using llmc::tl::AffineIndexBuilder;
using llmc::tl::isComputedFrom;
using llmc::tl::linearCoefficient;
using llmc::tl::ReductionUpdate;

namespace {

/// What a value of the band is: the same in every lane (scalar), or one
/// element per lane of a context (a vector).
struct Widened {
  Value value;
  bool varying = false;
};

/// The lanes a value is computed over: the band's non-group loops, or
/// all of its loops (inside the group loops).
struct Context {
  bool group = false;
};

class BandVectorizer {
public:
  BandVectorizer(RewriterBase &rw, ArrayRef<tl::ForOp> band,
                 ArrayRef<int64_t> extents, unsigned numGroup,
                 int64_t baseAlignment)
      : rw(rw), band(band.begin(), band.end()),
        extents(extents.begin(), extents.end()), numGroup(numGroup),
        baseAlignment(baseAlignment), loc(band.front()->getLoc()) {
    lanes = 1;
    for (unsigned d = 0; d + numGroup < extents.size(); ++d)
      lanes *= extents[d];
    groupSize = 1;
    for (unsigned d = extents.size() - numGroup; d < extents.size(); ++d)
      groupSize *= extents[d];
  }

  LogicalResult run();

private:
  unsigned numDims(Context c) const {
    return c.group ? extents.size() : extents.size() - numGroup;
  }
  int64_t width(Context c) const {
    return c.group ? lanes * groupSize : lanes;
  }
  /// The coordinate of band dim `d` in each lane of `c`.
  SmallVector<int64_t> coordinates(unsigned d, Context c) const {
    int64_t w = width(c);
    int64_t stride = 1;
    for (unsigned k = d + 1; k < numDims(c); ++k)
      stride *= extents[k];
    SmallVector<int64_t> out;
    for (int64_t l = 0; l < w; ++l)
      out.push_back((l / stride) % extents[d]);
    return out;
  }
  VectorType vecType(Type element, Context c) const {
    return VectorType::get({width(c)}, element);
  }
  Value broadcast(Value scalar, Context c) {
    return vector::BroadcastOp::create(rw, loc,
                                       vecType(scalar.getType(), c), scalar);
  }
  /// `v` as a vector of `c` (broadcast when scalar).
  Value asVector(Widened v, Context c) {
    return v.varying ? v.value : broadcast(v.value, c);
  }

  FailureOr<Widened> widen(Value v, Context c);
  FailureOr<Widened> widenOp(Operation *op, unsigned resultIndex, Context c,
                             IRMapping *bodyMap = nullptr);
  LogicalResult vectorizeBlock(tl::BlockOp block, Context c);
  LogicalResult emitBody(tl::BlockOp block, Block *body, Context c,
                         ReductionUpdate *update);
  FailureOr<Value> load(tl::BlockOp block, affine::AffineLoadOp op, Context c,
                        bool lanesOnly);
  LogicalResult store(tl::BlockOp block, affine::AffineStoreOp op, Value value,
                      Context c);
  /// The indices of an access as affine expressions of the band's loops
  /// (dims 0..n-1) and other values.
  FailureOr<SmallVector<AffineExpr>> accessExprs(tl::BlockOp block,
                                                 AffineMap map,
                                                 ValueRange operands);
  SmallVector<Value> materialize(ArrayRef<AffineExpr> exprs,
                                 ArrayRef<int64_t> bandValues);
  /// The alignment (bytes) a vector load of `bytes` at the element `exprs`
  /// (the band dims at `bandValues`) of `memType` is known to have, where
  /// buffers start at multiples of baseAlignment: none (the element's) when
  /// baseAlignment is 0 or an index or stride is not known well enough.
  llvm::MaybeAlign knownAlignment(MemRefType memType,
                                  ArrayRef<AffineExpr> exprs,
                                  ArrayRef<int64_t> bandValues, int64_t bytes);
  /// The lanes of an access (its indices `exprs`, the lanes' coordinates
  /// `coords`) in aligned segments that each read consecutive elements of
  /// the last index, at least 16 bytes (of `elemBytes` each) a segment, a
  /// power-of-two number of them: the segment's lanes, or 0 when there is
  /// none.
  int64_t contiguousSegment(ArrayRef<AffineExpr> exprs,
                            ArrayRef<SmallVector<int64_t>> coords,
                            int64_t width, int64_t elemBytes);
  /// `e` simplified with each band dim in [0, extent) (simplifyWithRanges:
  /// the lanes of a blocked layout's block become linear in the band).
  AffineExpr withBandRanges(AffineExpr e) const {
    return tl::simplifyWithRanges(
        e, [&](unsigned d) -> std::optional<std::pair<int64_t, int64_t>> {
          if (d >= band.size())
            return std::nullopt;
          return std::make_pair(int64_t(0), extents[d] - 1);
        });
  }

  RewriterBase &rw;
  SmallVector<tl::ForOp> band;
  SmallVector<int64_t> extents;
  unsigned numGroup;
  int64_t baseAlignment;
  Location loc;
  int64_t lanes, groupSize;
  /// Widened values outside blocks, per context.
  DenseMap<std::pair<Value, unsigned>, Widened> memo;
  /// Widened block arguments and body values of the block being emitted.
  DenseMap<Value, Widened> local;
  /// The block whose region arguments are being widened.
  tl::BlockOp argsOf;
  std::optional<AffineIndexBuilder> ab;
};

} // namespace

SmallVector<Value> BandVectorizer::materialize(ArrayRef<AffineExpr> exprs,
                                               ArrayRef<int64_t> bandValues) {
  SmallVector<Value> dimValues(ab->dims);
  for (unsigned d = 0; d < band.size(); ++d)
    dimValues[d] = arith::ConstantIndexOp::create(
        rw, loc, d < bandValues.size() ? bandValues[d] : 0);
  SmallVector<Value> out;
  for (AffineExpr e : exprs)
    out.push_back(affine::expandAffineExpr(rw, loc, e, dimValues, {}));
  return out;
}

llvm::MaybeAlign BandVectorizer::knownAlignment(MemRefType memType,
                                                ArrayRef<AffineExpr> exprs,
                                                ArrayRef<int64_t> bandValues,
                                                int64_t bytes) {
  int64_t elemBytes = memType.getElementTypeBitWidth() / 8;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!baseAlignment || elemBytes < 1 ||
      failed(memType.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return {};
  MLIRContext *ctx = rw.getContext();
  unsigned n = std::max<unsigned>(ab->dims.size(), 1);
  SmallVector<AffineExpr> repl;
  for (unsigned d = 0; d < n; ++d)
    repl.push_back(d < band.size()
                       ? getAffineConstantExpr(
                             d < bandValues.size() ? bandValues[d] : 0, ctx)
                       : getAffineDimExpr(d, ctx));
  SmallVector<AffineExpr> zeros(n, getAffineConstantExpr(0, ctx));
  // The gcd of every term of the element offset (in elements).
  uint64_t g = std::abs(offset);
  for (auto [e, stride] : llvm::zip(exprs, strides)) {
    AffineExpr at = simplifyAffineExpr(e.replaceDims(repl), n, 0);
    if (auto c = dyn_cast<AffineConstantExpr>(at); c && c.getValue() == 0)
      continue;
    if (ShapedType::isDynamic(stride))
      return {};
    for (unsigned d = band.size(); d < n; ++d) {
      std::optional<int64_t> k = linearCoefficient(at, d, n);
      if (!k)
        return {};
      g = std::gcd(g, uint64_t(std::abs(*k * stride)));
    }
    auto c = dyn_cast<AffineConstantExpr>(
        simplifyAffineExpr(at.replaceDims(zeros), n, 0));
    if (!c)
      return {};
    g = std::gcd(g, uint64_t(std::abs(c.getValue() * stride)));
  }
  // The largest power of two dividing every term, in bytes.
  uint64_t align = std::min<uint64_t>(baseAlignment, llvm::PowerOf2Ceil(bytes));
  while (align > uint64_t(elemBytes) && g % (align / elemBytes))
    align /= 2;
  if (align <= uint64_t(elemBytes))
    return {};
  return llvm::Align(align);
}

FailureOr<SmallVector<AffineExpr>>
BandVectorizer::accessExprs(tl::BlockOp block, AffineMap map,
                            ValueRange operands) {
  SmallVector<AffineExpr> repl;
  for (Value o : operands) {
    auto arg = dyn_cast<BlockArgument>(o);
    std::optional<AffineExpr> e;
    if (auto c = getConstantIntValue(o))
      e = getAffineConstantExpr(*c, rw.getContext());
    else if (arg && arg.getOwner()->getParentOp() == block)
      e = ab->build(block.getIterValues()[arg.getArgNumber()]);
    if (!e)
      return block.emitOpError("cannot vectorize: an access index is not "
                               "affine in the band's loops");
    repl.push_back(*e);
  }
  SmallVector<AffineExpr> out;
  unsigned n = ab->dims.size();
  for (AffineExpr r : map.getResults())
    out.push_back(withBandRanges(simplifyAffineExpr(
        r.replaceDimsAndSymbols(
            ArrayRef<AffineExpr>(repl).take_front(map.getNumDims()),
            ArrayRef<AffineExpr>(repl).drop_front(map.getNumDims())),
        std::max(n, 1u), 0)));
  return out;
}

int64_t BandVectorizer::contiguousSegment(ArrayRef<AffineExpr> exprs,
                                          ArrayRef<SmallVector<int64_t>> coords,
                                          int64_t width, int64_t elemBytes) {
  unsigned n = std::max<unsigned>(ab->dims.size(), 1);
  MLIRContext *ctx = rw.getContext();
  // Each lane's indices, the band's dims replaced by the lane's coordinates.
  SmallVector<SmallVector<AffineExpr>> at;
  for (int64_t l = 0; l < width; ++l) {
    SmallVector<AffineExpr> repl;
    for (unsigned d = 0; d < n; ++d)
      repl.push_back(d < coords.size()
                         ? getAffineConstantExpr(coords[d][l], ctx)
                         : getAffineDimExpr(d, ctx));
    at.push_back(llvm::map_to_vector(exprs, [&](AffineExpr e) {
      return simplifyAffineExpr(e.replaceDims(repl), n, 0);
    }));
  }
  // The widest segment (the band split into 2, 4, 8, ... equal parts, so
  // that pairs of them join; at least 4 lanes and 16 bytes) whose lanes
  // read consecutive elements of one row, in order.
  for (int64_t parts = 2; width % parts == 0; parts *= 2) {
    int64_t seg = width / parts;
    if (seg < 4 || seg * elemBytes < 16)
      break;
    bool ok = true;
    for (int64_t start = 0; ok && start < width; start += seg)
      for (int64_t k = 1; ok && k < seg; ++k) {
        ArrayRef<AffineExpr> first = at[start], lane = at[start + k];
        ok = first.drop_back() == lane.drop_back() &&
             simplifyAffineExpr(lane.back() - first.back(), n, 0) ==
                 getAffineConstantExpr(k, ctx);
      }
    if (ok)
      return seg;
  }
  return 0;
}

FailureOr<Widened> BandVectorizer::widen(Value v, Context c) {
  if (auto it = local.find(v); it != local.end())
    return it->second;
  if (auto arg = dyn_cast<BlockArgument>(v);
      arg && argsOf && arg.getOwner()->getParentOp() == argsOf) {
    FailureOr<Widened> w =
        widen(argsOf.getIterValues()[arg.getArgNumber()], c);
    if (succeeded(w))
      local[v] = *w;
    return w;
  }
  for (unsigned d = 0; d < band.size(); ++d)
    if (v == band[d].getInductionVar()) {
      if (d >= numDims(c))
        return band[d].emitOpError(
            "cannot vectorize: a group reduction loop's variable is used "
            "outside the group");
      auto key = std::make_pair(v, unsigned(c.group));
      if (auto it = memo.find(key); it != memo.end())
        return it->second;
      auto attr = DenseElementsAttr::get(
          vecType(rw.getIndexType(), c),
          llvm::map_to_vector(coordinates(d, c), [&](int64_t x) {
            return Attribute(rw.getIndexAttr(x));
          }));
      Widened w{arith::ConstantOp::create(rw, loc, attr), true};
      memo[key] = w;
      return w;
    }
  Operation *def = v.getDefiningOp();
  if (!def || !band.front()->isAncestor(def))
    return Widened{v, false};
  auto key = std::make_pair(v, unsigned(c.group));
  if (auto it = memo.find(key); it != memo.end())
    return it->second;
  FailureOr<Widened> w =
      widenOp(def, cast<OpResult>(v).getResultNumber(), c);
  if (succeeded(w))
    memo[key] = *w;
  return w;
}

FailureOr<Widened> BandVectorizer::widenOp(Operation *op, unsigned resultIndex,
                                           Context c, IRMapping *bodyMap) {
  if (auto cst = dyn_cast<arith::ConstantOp>(op)) {
    return Widened{rw.clone(*op)->getResult(resultIndex), false};
  }
  bool elementwise = op->hasTrait<OpTrait::Elementwise>() ||
                     isa<arith::SelectOp, arith::IndexCastOp,
                         arith::IndexCastUIOp>(op);
  if (!elementwise || op->getNumRegions() || op->getNumResults() != 1)
    return op->emitOpError("cannot vectorize this operation (only "
                           "elementwise arithmetic is widened)");
  SmallVector<Widened> operands;
  bool varying = false;
  for (Value o : op->getOperands()) {
    FailureOr<Widened> w = local.count(o) ? FailureOr<Widened>(local[o])
                                          : widen(o, c);
    if (failed(w))
      return failure();
    varying |= w->varying;
    operands.push_back(*w);
  }
  SmallVector<Value> newOperands;
  for (Widened &w : operands)
    newOperands.push_back(varying ? asVector(w, c) : w.value);
  Type resultType = op->getResult(0).getType();
  if (varying)
    resultType = vecType(resultType, c);
  OperationState state(op->getLoc(), op->getName(), newOperands, {resultType},
                       op->getAttrs());
  Operation *clone = rw.create(state);
  return Widened{clone->getResult(0), varying};
}

/// Whether `memType`'s last dimension is contiguous (any layout with a unit
/// last stride: a buffer, a slice of one) and only the last of the access's
/// index expressions uses the band dims `used` (a candidate for one
/// contiguous vector load or store).
static bool onlyLastIndexUses(MemRefType memType, ArrayRef<AffineExpr> exprs,
                              ArrayRef<unsigned> used) {
  return memType.isLastDimUnitStride() &&
         llvm::all_of(exprs.drop_back(), [&](AffineExpr e) {
           return llvm::none_of(
               used, [&](unsigned d) { return e.isFunctionOfDim(d); });
         });
}

FailureOr<Value> BandVectorizer::load(tl::BlockOp block,
                                      affine::AffineLoadOp op, Context c,
                                      bool lanesOnly) {
  auto exprs = accessExprs(block, op.getAffineMap(), op.getMapOperands());
  if (failed(exprs))
    return failure();
  Context lc = lanesOnly ? Context{false} : c;
  unsigned nd = numDims(lc);
  auto memType = cast<MemRefType>(op.getMemRef().getType());
  Type elem = memType.getElementType();
  // The band dims each index uses.
  SmallVector<unsigned> used;
  for (unsigned d = 0; d < band.size(); ++d)
    if (llvm::any_of(*exprs, [&](AffineExpr e) { return e.isFunctionOfDim(d); })) {
      if (d >= nd)
        return op.emitOpError("cannot vectorize: the accumulator of a group "
                              "reduction depends on the group");
      used.push_back(d);
    }
  if (used.empty()) {
    SmallVector<Value> idx = materialize(*exprs, {});
    return memref::LoadOp::create(rw, loc, op.getMemRef(), idx).getResult();
  }
  // Contiguous: only the last index uses the band, linearly, and the lanes
  // read within a small contiguous range (row-major over `used` in the
  // common case; reversed, interleaved or strided loops too), replicated
  // across the lanes the access does not depend on: one vector load and a
  // shuffle.
  unsigned numAll = ab->dims.size();
  bool contiguous = onlyLastIndexUses(memType, *exprs, used);
  int64_t span = 1;
  SmallVector<int64_t> coefs;
  for (unsigned d : used) {
    auto coef = contiguous ? linearCoefficient(exprs->back(), d, numAll)
                           : std::nullopt;
    if (!coef)
      contiguous = false;
    coefs.push_back(coef.value_or(0));
    span *= extents[d];
  }
  if (contiguous) {
    SmallVector<SmallVector<int64_t>> coords;
    for (unsigned d = 0; d < nd; ++d)
      coords.push_back(coordinates(d, lc));
    SmallVector<int64_t> offsets;
    int64_t minOff = 0, minLane = 0;
    for (int64_t l = 0; l < width(lc); ++l) {
      int64_t off = 0;
      for (auto [i, d] : llvm::enumerate(used))
        off += coefs[i] * coords[d][l];
      if (l == 0 || off < minOff) {
        minOff = off;
        minLane = l;
      }
      offsets.push_back(off);
    }
    // The range the lanes read: whole when they read a permutation of it;
    // a strided or partly used one (every other element, say) is still
    // loaded whole, and the lanes picked out, when it is small: every
    // element of it lies between two that are read, so within the buffer.
    int64_t maxOff = 0;
    for (int64_t &off : offsets) {
      off -= minOff;
      maxOff = std::max(maxOff, off);
    }
    int64_t range = maxOff + 1;
    int64_t elemBytes = std::max<int64_t>(1, elem.getIntOrFloatBitWidth() / 8);
    if (contiguous &&
        (range == span || range * elemBytes <= 64 || range <= 2 * span)) {
      SmallVector<int64_t> at;
      for (unsigned d = 0; d < nd; ++d)
        at.push_back(coords[d][minLane]);
      SmallVector<Value> idx = materialize(*exprs, at);
      Value result = vector::LoadOp::create(
          rw, loc, VectorType::get({range}, elem), op.getMemRef(), idx,
          /*nontemporal=*/false,
          knownAlignment(memType, *exprs, at, range * elemBytes));
      bool identity = range == width(lc);
      for (int64_t l = 0; identity && l < range; ++l)
        identity = offsets[l] == l;
      if (identity)
        return result;
      return vector::ShuffleOp::create(rw, loc, result, result, offsets)
          .getResult();
    }
  }
  // Segments: aligned runs of lanes, each reading a contiguous range (the
  // blocks of a blocked layout under a wider band): a vector load each,
  // concatenated.
  SmallVector<SmallVector<int64_t>> coords;
  for (unsigned d = 0; d < nd; ++d)
    coords.push_back(coordinates(d, lc));
  int64_t seg = 0;
  if (memType.isLastDimUnitStride())
    seg = contiguousSegment(
        *exprs, coords, width(lc),
        std::max<int64_t>(1, elem.getIntOrFloatBitWidth() / 8));
  if (seg) {
    SmallVector<Value> parts;
    for (int64_t start = 0; start < width(lc); start += seg) {
      SmallVector<int64_t> at;
      for (unsigned d = 0; d < nd; ++d)
        at.push_back(coords[d][start]);
      int64_t elemBytes =
          std::max<int64_t>(1, elem.getIntOrFloatBitWidth() / 8);
      parts.push_back(vector::LoadOp::create(
          rw, loc, VectorType::get({seg}, elem), op.getMemRef(),
          materialize(*exprs, at), /*nontemporal=*/false,
          knownAlignment(memType, *exprs, at, seg * elemBytes)));
    }
    while (parts.size() > 1) {
      SmallVector<Value> joined;
      for (size_t i = 0; i < parts.size(); i += 2) {
        int64_t n = cast<VectorType>(parts[i].getType()).getNumElements();
        joined.push_back(vector::ShuffleOp::create(
            rw, loc, parts[i], parts[i + 1],
            llvm::to_vector(llvm::seq<int64_t>(0, 2 * n))));
      }
      parts = std::move(joined);
    }
    return parts.front();
  }
  // Anything else: one scalar load per lane.
  SmallVector<Value> elems;
  for (int64_t l = 0; l < width(lc); ++l) {
    SmallVector<int64_t> at;
    for (unsigned d = 0; d < nd; ++d)
      at.push_back(coords[d][l]);
    SmallVector<Value> idx = materialize(*exprs, at);
    elems.push_back(memref::LoadOp::create(rw, loc, op.getMemRef(), idx));
  }
  return vector::FromElementsOp::create(rw, loc, vecType(elem, lc), elems)
      .getResult();
}

LogicalResult BandVectorizer::store(tl::BlockOp block,
                                    affine::AffineStoreOp op, Value value,
                                    Context c) {
  auto exprs = accessExprs(block, op.getAffineMap(), op.getMapOperands());
  if (failed(exprs))
    return failure();
  unsigned nd = numDims(c);
  auto memType = cast<MemRefType>(op.getMemRef().getType());
  SmallVector<unsigned> used;
  for (unsigned d = 0; d < band.size(); ++d)
    if (llvm::any_of(*exprs, [&](AffineExpr e) { return e.isFunctionOfDim(d); }))
      used.push_back(d);
  if (used.size() != nd)
    return op.emitOpError("cannot vectorize: the lanes would store to the "
                          "same element");
  if (!isa<VectorType>(value.getType()))
    value = broadcast(value, c);
  unsigned numAll = ab->dims.size();
  bool contiguous = onlyLastIndexUses(memType, *exprs, used);
  int64_t span = 1;
  for (unsigned i = used.size(); contiguous && i-- > 0;) {
    auto coef = linearCoefficient(exprs->back(), used[i], numAll);
    if (!coef || *coef != span)
      contiguous = false;
    span *= extents[used[i]];
  }
  if (contiguous) {
    SmallVector<Value> idx = materialize(*exprs, {});
    vector::StoreOp::create(rw, loc, value, op.getMemRef(), idx);
    return success();
  }
  SmallVector<SmallVector<int64_t>> coords;
  for (unsigned d = 0; d < nd; ++d)
    coords.push_back(coordinates(d, c));
  for (int64_t l = 0; l < width(c); ++l) {
    SmallVector<int64_t> at;
    for (unsigned d = 0; d < nd; ++d)
      at.push_back(coords[d][l]);
    SmallVector<Value> idx = materialize(*exprs, at);
    Value e = vector::ExtractOp::create(rw, loc, value, l);
    memref::StoreOp::create(rw, loc, e, op.getMemRef(), idx);
  }
  return success();
}

LogicalResult BandVectorizer::emitBody(tl::BlockOp block, Block *body,
                                       Context c, ReductionUpdate *update) {
  // Iteration variables are widened where used (an init does not use the
  // group's variables, which are zero where it runs).
  argsOf = block;
  for (Operation &op : body->without_terminator()) {
    if (auto l = dyn_cast<affine::AffineLoadOp>(op)) {
      bool acc = update && l == update->load;
      FailureOr<Value> v = load(block, l, c, /*lanesOnly=*/acc);
      if (failed(v))
        return failure();
      local[l.getResult()] = Widened{*v, isa<VectorType>(v->getType())};
      continue;
    }
    if (auto s = dyn_cast<affine::AffineStoreOp>(op)) {
      FailureOr<Widened> stored = widen(s.getValueToStore(), c);
      if (failed(stored))
        return failure();
      Widened w = *stored;
      Context sc = update && s == update->store ? Context{false} : c;
      if (failed(store(block, s, w.value, sc)))
        return failure();
      continue;
    }
    if (update && &op == update->combine) {
      // The group reduction: the lanes of the group loops are combined into
      // the accumulator's lanes.
      Value accv = local[update->load.getResult()].value;
      Value x;
      if (update->fma) {
        auto fma = cast<math::FmaOp>(op);
        FailureOr<Widened> a = widen(fma.getA(), c);
        FailureOr<Widened> b = widen(fma.getB(), c);
        if (failed(a) || failed(b))
          return failure();
        Value av = local.count(fma.getA()) ? local[fma.getA()].value : a->value;
        Value bv = local.count(fma.getB()) ? local[fma.getB()].value : b->value;
        x = arith::MulFOp::create(rw, loc, asVector({av, isa<VectorType>(av.getType())}, c),
                                  asVector({bv, isa<VectorType>(bv.getType())}, c));
      } else {
        Widened w = local.count(update->operand)
                        ? local[update->operand]
                        : *widen(update->operand, c);
        x = asVector(w, c);
      }
      Type elem = cast<VectorType>(x.getType()).getElementType();
      Value grouped = vector::ShapeCastOp::create(
          rw, loc, VectorType::get({lanes, groupSize}, elem), x);
      if (!isa<VectorType>(accv.getType()))
        accv = broadcast(accv, Context{false});
      auto kind = update->kind;
      vector::CombiningKind ck =
          kind == arith::AtomicRMWKind::addf || kind == arith::AtomicRMWKind::addi
              ? vector::CombiningKind::ADD
          : kind == arith::AtomicRMWKind::mulf || kind == arith::AtomicRMWKind::muli
              ? vector::CombiningKind::MUL
          : kind == arith::AtomicRMWKind::maxnumf ? vector::CombiningKind::MAXNUMF
          : kind == arith::AtomicRMWKind::minnumf ? vector::CombiningKind::MINNUMF
          : kind == arith::AtomicRMWKind::maximumf ? vector::CombiningKind::MAXIMUMF
          : kind == arith::AtomicRMWKind::minimumf ? vector::CombiningKind::MINIMUMF
          : kind == arith::AtomicRMWKind::maxs ? vector::CombiningKind::MAXSI
          : kind == arith::AtomicRMWKind::mins ? vector::CombiningKind::MINSI
          : kind == arith::AtomicRMWKind::ori ? vector::CombiningKind::OR
                                              : vector::CombiningKind::AND;
      Value red = vector::MultiDimReductionOp::create(
          rw, loc, ck, grouped, accv, ArrayRef<int64_t>{1});
      local[op.getResult(0)] = Widened{red, true};
      continue;
    }
    if (op.getNumResults() != 1)
      return op.emitOpError("cannot vectorize this operation");
    FailureOr<Widened> w = widenOp(&op, 0, c);
    if (failed(w))
      return failure();
    local[op.getResult(0)] = *w;
  }
  return success();
}

LogicalResult BandVectorizer::vectorizeBlock(tl::BlockOp block, Context c) {
  local.clear();
  // Index maps applied in the block's regions are spelled out as
  // arithmetic first, which is widened like any other.
  SmallVector<affine::AffineApplyOp> applies;
  block->walk([&](affine::AffineApplyOp a) { applies.push_back(a); });
  for (affine::AffineApplyOp a : applies) {
    OpBuilder::InsertionGuard guard(rw);
    rw.setInsertionPoint(a);
    auto expanded = affine::expandAffineMap(rw, a.getLoc(), a.getAffineMap(),
                                            llvm::to_vector(a.getOperands()));
    if (!expanded)
      return a.emitOpError("cannot vectorize: cannot expand the map");
    rw.replaceOp(a, (*expanded)[0]);
  }
  // Reduction variables bound to group loops are reduced across lanes;
  // any other must be the same in every lane.
  Value cond;
  for (unsigned i = 0, e = block.getNumIters(); i < e; ++i) {
    if (block.getIterKind(i) != tl::IterKind::reduce)
      continue;
    Value v = block.getIterValues()[i];
    // Bound to a group loop (directly, or through index arithmetic such
    // as a split or a reversal).
    bool onGroup = false;
    for (unsigned d = band.size() - numGroup; d < band.size(); ++d)
      onGroup |= isComputedFrom(v, band[d].getInductionVar(), band.front());
    if (onGroup) {
      if (!c.group)
        return block.emitOpError("cannot vectorize: reduction on a group loop "
                                 "outside the group");
      continue;
    }
    FailureOr<Widened> w = widen(v, Context{false});
    if (failed(w))
      return failure();
    if (w->varying)
      return block.emitOpError("cannot vectorize: reduction variable ")
             << i << " differs between lanes";
    if (block.getInitBlock()) {
      Value zero = arith::ConstantIndexOp::create(rw, loc, 0);
      Value isFirst = arith::CmpIOp::create(rw, loc, arith::CmpIPredicate::eq,
                                            w->value, zero);
      cond = cond ? arith::AndIOp::create(rw, loc, cond, isFirst).getResult()
                  : isFirst;
    }
  }
  std::optional<ReductionUpdate> update;
  if (c.group) {
    FailureOr<ReductionUpdate> u = tl::matchReductionUpdate(block);
    if (failed(u))
      return block.emitOpError("cannot vectorize: a block under a group "
                               "reduction loop must update one accumulator "
                               "as `acc = combine(acc, x)`");
    update = *u;
  }
  ab.emplace(band.front(), /*opaqueInside=*/false);
  for (tl::ForOp l : band)
    ab->dim(l.getInductionVar());
  if (Block *init = block.getInitBlock()) {
    // The init (of the lanes' accumulators) where it runs.
    OpBuilder::InsertionGuard guard(rw);
    if (cond) {
      auto ifOp = scf::IfOp::create(rw, loc, cond, /*else=*/false);
      rw.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    }
    if (failed(emitBody(block, init, Context{false}, nullptr)))
      return failure();
    local.clear();
  }
  return emitBody(block, block.getBodyBlock(), c,
                  update ? &*update : nullptr);
}

LogicalResult BandVectorizer::run() {
  rw.setInsertionPoint(band.front());
  // Walk the innermost non-group loop's body: index arithmetic, blocks, and
  // the group loops around blocks. A band of group loops only (a horizontal
  // reduction) has one lane.
  bool allGroup = numGroup == band.size();
  tl::ForOp inner = allGroup ? band.front() : band[band.size() - numGroup - 1];
  std::function<LogicalResult(Block *, Context)> emit =
      [&](Block *body, Context c) -> LogicalResult {
    for (Operation &op : body->without_terminator()) {
      if (auto b = dyn_cast<tl::BlockOp>(op)) {
        if (failed(vectorizeBlock(b, c)))
          return failure();
        continue;
      }
      if (auto l = dyn_cast<tl::ForOp>(op)) {
        if (!llvm::is_contained(band, l))
          return l.emitOpError("cannot vectorize: a loop inside a vectorized "
                               "band must be part of it");
        if (failed(emit(l.getBody(), Context{true})))
          return failure();
        continue;
      }
      if (!isPure(&op) || op.getNumRegions())
        return op.emitOpError("cannot vectorize this operation in a band");
      // Index arithmetic is widened where blocks use it.
    }
    return success();
  };
  // Loops of the band above `inner` hold only index arithmetic besides the
  // next loop.
  for (tl::ForOp l : band) {
    if (l == inner || allGroup)
      break;
    for (Operation &op : l.getBody()->without_terminator())
      if (!llvm::is_contained(band, dyn_cast<tl::ForOp>(&op)) &&
          (!isPure(&op) || op.getNumRegions()))
        return op.emitOpError("cannot vectorize: only the innermost loop of a "
                              "vectorized band may hold blocks");
  }
  if (failed(emit(inner.getBody(), Context{allGroup})))
    return failure();
  rw.eraseOp(band.front());
  return success();
}

LogicalResult llmc::vectorizeBands(Operation *root, RewriterBase &rw,
                                   int64_t baseAlignment) {
  SmallVector<tl::ForOp> roots;
  root->walk([&](tl::ForOp l) {
    if (l.getKind() != tl::LoopKind::vectorized)
      return;
    auto parent = l->getParentOfType<tl::ForOp>();
    if (!parent || parent.getKind() != tl::LoopKind::vectorized)
      roots.push_back(l);
  });
  for (tl::ForOp top : roots) {
    SmallVector<tl::ForOp> band = {top};
    while (true) {
      tl::ForOp next;
      for (Operation &op : band.back().getBody()->without_terminator())
        if (auto l = dyn_cast<tl::ForOp>(op);
            l && l.getKind() == tl::LoopKind::vectorized)
          next = l;
      if (!next)
        break;
      band.push_back(next);
    }
    SmallVector<int64_t> extents;
    for (tl::ForOp l : band) {
      auto lb = getConstantIntValue(l.getLowerBound());
      auto ub = getConstantIntValue(l.getUpperBound());
      auto step = getConstantIntValue(l.getStep());
      if (lb != 0 || step != 1 || !ub || *ub < 1)
        return l.emitOpError("a vectorized loop needs bounds 0 to a constant "
                             "with step 1");
      extents.push_back(*ub);
    }
    // Group loops: the trailing loops of the band that bind reduction
    // variables of the blocks inside them.
    unsigned numGroup = 0;
    for (unsigned d = band.size(); d-- > 0;) {
      bool reduces = false;
      band[d]->walk([&](tl::BlockOp b) {
        for (unsigned i = 0, e = b.getNumIters(); i < e; ++i)
          if (b.getIterKind(i) == tl::IterKind::reduce &&
              isComputedFrom(b.getIterValues()[i], band[d].getInductionVar(),
                           band[d]))
            reduces = true;
      });
      if (!reduces)
        break;
      ++numGroup;
    }
    BandVectorizer v(rw, band, extents, numGroup, baseAlignment);
    if (failed(v.run()))
      return failure();
  }
  return success();
}
