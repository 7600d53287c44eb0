//===- TLOps.cpp - tensor-loop dialect ops: syntax and verifiers ----------===//
#include "Dialect/TL/IR/TL.h"

#include "mlir/Dialect/Affine/IR/AffineMemoryOpInterfaces.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace llmc::tl;

//===----------------------------------------------------------------------===//
// ForOp
//===----------------------------------------------------------------------===//

void ForOp::build(OpBuilder &builder, OperationState &state, Value lowerBound,
                  Value upperBound, Value step, LoopKind kind,
                  function_ref<void(OpBuilder &, Location, Value)> bodyBuilder) {
  state.addOperands({lowerBound, upperBound, step});
  state.addAttribute(getKindAttrName(state.name),
                     LoopKindAttr::get(builder.getContext(), kind));
  Region *region = state.addRegion();
  Block *body = new Block();
  body->addArgument(builder.getIndexType(), state.location);
  region->push_back(body);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(body);
  if (bodyBuilder)
    bodyBuilder(builder, state.location, body->getArgument(0));
  YieldOp::create(builder, state.location);
}

void ForOp::print(OpAsmPrinter &p) {
  p << " " << getInductionVar() << " = " << getLowerBound() << " to "
    << getUpperBound() << " step " << getStep();
  if (getKind() != LoopKind::serial)
    p << " kind(" << stringifyLoopKind(getKind()) << ")";
  if (auto thread = getThreadAttr())
    p << " thread(" << thread << ")";
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(),
                          {getKindAttrName(), getThreadAttrName()});
  p << " ";
  p.printRegion(getRegion(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

ParseResult ForOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  OpAsmParser::Argument iv;
  OpAsmParser::UnresolvedOperand lb, ub, step;
  iv.type = b.getIndexType();
  if (parser.parseArgument(iv) || parser.parseEqual() ||
      parser.parseOperand(lb) || parser.parseKeyword("to") ||
      parser.parseOperand(ub) || parser.parseKeyword("step") ||
      parser.parseOperand(step) ||
      parser.resolveOperands({lb, ub, step}, b.getIndexType(),
                             result.operands))
    return failure();
  LoopKind kind = LoopKind::serial;
  if (succeeded(parser.parseOptionalKeyword("kind"))) {
    StringRef word;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseLParen() || parser.parseKeyword(&word) ||
        parser.parseRParen())
      return failure();
    auto parsed = symbolizeLoopKind(word);
    if (!parsed)
      return parser.emitError(loc, "unknown loop kind '") << word << "'";
    kind = *parsed;
  }
  result.addAttribute(getKindAttrName(result.name),
                      LoopKindAttr::get(b.getContext(), kind));
  if (succeeded(parser.parseOptionalKeyword("thread"))) {
    StringAttr tag;
    if (parser.parseLParen() || parser.parseAttribute(tag) ||
        parser.parseRParen())
      return failure();
    result.addAttribute(getThreadAttrName(result.name), tag);
  }
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, {iv}))
    return failure();
  ForOp::ensureTerminator(*body, b, result.location);
  return success();
}

LogicalResult ForOp::verify() {
  bool bound = getKind() == LoopKind::thread_bound;
  if (bound != static_cast<bool>(getThreadAttr()))
    return emitOpError(bound ? "a thread_bound loop needs a thread axis"
                             : "only thread_bound loops name a thread axis");
  Block *body = getBody();
  if (body->getNumArguments() != 1 ||
      !body->getArgument(0).getType().isIndex())
    return emitOpError("body must take exactly one index argument");
  return success();
}

namespace {
/// Loops whose constant bounds give zero or one iteration: erase the loop,
/// or inline its body with the induction variable replaced by the lower
/// bound. (Schedules, e.g. splits by the full extent, produce these.) A
/// loop bound to a GPU axis keeps its one iteration: it is the launch.
struct FoldTrivialLoop : OpRewritePattern<ForOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ForOp op,
                                PatternRewriter &rewriter) const override {
    auto lb = getConstantIntValue(op.getLowerBound());
    auto ub = getConstantIntValue(op.getUpperBound());
    auto step = getConstantIntValue(op.getStep());
    if (!lb || !ub || !step || *step <= 0)
      return rewriter.notifyMatchFailure(op, "bounds are not constant");
    if (*ub <= *lb) {
      rewriter.eraseOp(op);
      return success();
    }
    if (*lb + *step < *ub)
      return rewriter.notifyMatchFailure(op, "more than one iteration");
    if (op.getKind() == LoopKind::thread_bound)
      return rewriter.notifyMatchFailure(op, "bound to a GPU axis");
    Block *body = op.getBody();
    rewriter.eraseOp(body->getTerminator());
    rewriter.inlineBlockBefore(body, op, op.getLowerBound());
    rewriter.eraseOp(op);
    return success();
  }
};
} // namespace

void ForOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<FoldTrivialLoop>(context);
}

//===----------------------------------------------------------------------===//
// BlockOp
//===----------------------------------------------------------------------===//

IterKind BlockOp::getIterKind(unsigned i) {
  return llvm::cast<IterKindAttr>(getIterKinds()[i]).getValue();
}

bool BlockOp::hasReduction() {
  for (unsigned i = 0, e = getNumIters(); i < e; ++i)
    if (getIterKind(i) == IterKind::reduce)
      return true;
  return false;
}

/// Prints `(%A[%i, %j] : memref<..>, ...)`.
static void printRegions(OpAsmPrinter &p, OperandRange buffers,
                         ArrayAttr maps, ValueRange iters) {
  p << "(";
  llvm::interleaveComma(llvm::zip(buffers, maps), p, [&](auto it) {
    auto [buffer, map] = it;
    p << buffer << "[";
    p.printAffineMapOfSSAIds(llvm::cast<AffineMapAttr>(map), iters);
    p << "]";
    p << " : " << buffer.getType();
  });
  p << ")";
}

void BlockOp::print(OpAsmPrinter &p) {
  p << " ";
  p.printAttribute(getNameAttr());
  p << " (";
  Block *body = getBodyBlock();
  for (unsigned i = 0, e = getNumIters(); i < e; ++i) {
    if (i)
      p << ", ";
    p << body->getArgument(i) << " = " << stringifyIterKind(getIterKind(i))
      << " " << getIterValues()[i];
  }
  p << ")";
  p << " reads";
  printRegions(p, getReads(), getReadMaps(), body->getArguments());
  p << " writes";
  printRegions(p, getWrites(), getWriteMaps(), body->getArguments());
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(),
                          {getNameAttrName(), getIterKindsAttrName(),
                           getReadMapsAttrName(), getWriteMapsAttrName(),
                           getOperandSegmentSizesAttrName()});
  if (!getInit().empty()) {
    p.shadowRegionArgs(getInit(), body->getArguments());
    p << " init ";
    p.printRegion(getInit(), /*printEntryBlockArgs=*/false,
                  /*printBlockTerminators=*/false);
  }
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/false);
}

/// Parses `(%A[%i, %j] : memref<..>, ...)` into buffers and maps over the
/// iteration variables `iters` (matched by SSA name).
static ParseResult
parseRegions(OpAsmParser &parser, ArrayRef<OpAsmParser::Argument> iters,
             SmallVectorImpl<OpAsmParser::UnresolvedOperand> &buffers,
             SmallVectorImpl<Type> &types, SmallVectorImpl<Attribute> &maps) {
  MLIRContext *ctx = parser.getContext();
  return parser.parseCommaSeparatedList(
      OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
        OpAsmParser::UnresolvedOperand buffer;
        SmallVector<OpAsmParser::UnresolvedOperand> ids;
        Attribute mapAttr;
        NamedAttrList scratch;
        Type type;
        SMLoc loc = parser.getCurrentLocation();
        if (parser.parseOperand(buffer) ||
            parser.parseAffineMapOfSSAIds(ids, mapAttr, "map", scratch) ||
            parser.parseColonType(type))
          return failure();
        AffineMap map = llvm::cast<AffineMapAttr>(mapAttr).getValue();
        // Rename the parsed dims (numbered by first use) to iteration
        // variable positions.
        SmallVector<AffineExpr> dims;
        for (auto &id : ids) {
          auto it = llvm::find_if(iters, [&](const OpAsmParser::Argument &a) {
            return a.ssaName.name == id.name && a.ssaName.number == id.number;
          });
          if (it == iters.end())
            return parser.emitError(loc, "region index '")
                   << id.name << "' is not an iteration variable of the block";
          dims.push_back(getAffineDimExpr(it - iters.begin(), ctx));
        }
        if (map.getNumSymbols())
          return parser.emitError(loc, "regions cannot use symbols");
        map = map.replaceDimsAndSymbols(dims, {}, iters.size(), 0);
        buffers.push_back(buffer);
        types.push_back(type);
        maps.push_back(AffineMapAttr::get(map));
        return success();
      });
}

ParseResult BlockOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  StringAttr name;
  if (parser.parseAttribute(name))
    return failure();
  result.addAttribute(getNameAttrName(result.name), name);

  SmallVector<OpAsmParser::Argument> iters;
  SmallVector<OpAsmParser::UnresolvedOperand> iterValues;
  SmallVector<Attribute> kinds;
  if (parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
            OpAsmParser::Argument arg;
            arg.type = b.getIndexType();
            StringRef word;
            OpAsmParser::UnresolvedOperand value;
            SMLoc loc = parser.getCurrentLocation();
            if (parser.parseArgument(arg) || parser.parseEqual() ||
                parser.parseKeyword(&word) || parser.parseOperand(value))
              return failure();
            auto kind = symbolizeIterKind(word);
            if (!kind)
              return parser.emitError(loc, "unknown iteration kind '")
                     << word << "' (expected spatial or reduce)";
            iters.push_back(arg);
            iterValues.push_back(value);
            kinds.push_back(IterKindAttr::get(b.getContext(), *kind));
            return success();
          }))
    return failure();
  if (parser.resolveOperands(iterValues, b.getIndexType(), result.operands))
    return failure();
  result.addAttribute(getIterKindsAttrName(result.name), b.getArrayAttr(kinds));

  SmallVector<OpAsmParser::UnresolvedOperand> reads, writes;
  SmallVector<Type> readTypes, writeTypes;
  SmallVector<Attribute> readMaps, writeMaps;
  SMLoc readLoc, writeLoc;
  if (parser.parseKeyword("reads") ||
      (readLoc = parser.getCurrentLocation(), false) ||
      parseRegions(parser, iters, reads, readTypes, readMaps) ||
      parser.parseKeyword("writes") ||
      (writeLoc = parser.getCurrentLocation(), false) ||
      parseRegions(parser, iters, writes, writeTypes, writeMaps) ||
      parser.resolveOperands(reads, readTypes, readLoc, result.operands) ||
      parser.resolveOperands(writes, writeTypes, writeLoc, result.operands))
    return failure();
  result.addAttribute(getReadMapsAttrName(result.name),
                      b.getArrayAttr(readMaps));
  result.addAttribute(getWriteMapsAttrName(result.name),
                      b.getArrayAttr(writeMaps));
  result.addAttribute(
      getOperandSegmentSizesAttrName(result.name),
      b.getDenseI32ArrayAttr({static_cast<int32_t>(iterValues.size()),
                              static_cast<int32_t>(reads.size()),
                              static_cast<int32_t>(writes.size())}));
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();

  Region *init = result.addRegion();
  Region *body = result.addRegion();
  if (succeeded(parser.parseOptionalKeyword("init"))) {
    if (parser.parseRegion(*init, iters))
      return failure();
    BlockOp::ensureTerminator(*init, b, result.location);
  }
  if (parser.parseRegion(*body, iters))
    return failure();
  BlockOp::ensureTerminator(*body, b, result.location);
  return success();
}

FailureOr<AffineMap>
llmc::tl::accessOverIters(AffineMap map, ValueRange operands, Block *block) {
  SmallVector<AffineExpr> dims;
  MLIRContext *ctx = map.getContext();
  for (Value v : operands) {
    auto arg = llvm::dyn_cast<BlockArgument>(v);
    if (!arg || arg.getOwner() != block)
      return failure();
    dims.push_back(getAffineDimExpr(arg.getArgNumber(), ctx));
  }
  // Dims come first in the operand list, then symbols.
  SmallVector<AffineExpr> dimRepl(dims.begin(),
                                  dims.begin() + map.getNumDims());
  SmallVector<AffineExpr> symRepl(dims.begin() + map.getNumDims(), dims.end());
  AffineMap result =
      map.replaceDimsAndSymbols(dimRepl, symRepl, block->getNumArguments(), 0);
  return simplifyAffineMap(result);
}

/// Checks that every buffer access in `block` goes through an affine op on
/// a declared buffer with a declared access map.
static LogicalResult verifyAccesses(BlockOp op, Block *block) {
  auto check = [&](Operation *access, Value memref, AffineMap map,
                   ValueRange operands, bool isWrite) -> LogicalResult {
    OperandRange buffers = isWrite ? op.getWrites() : op.getReads();
    ArrayAttr maps = isWrite ? op.getWriteMaps() : op.getReadMaps();
    FailureOr<AffineMap> actual =
        accessOverIters(map, operands, block);
    if (failed(actual))
      return access->emitOpError("indices must be iteration variables of the "
                                 "enclosing tl.block");
    bool bufferDeclared = false;
    for (auto [buffer, declared] : llvm::zip(buffers, maps)) {
      if (buffer != memref)
        continue;
      bufferDeclared = true;
      if (simplifyAffineMap(llvm::cast<AffineMapAttr>(declared).getValue()) ==
          *actual)
        return success();
    }
    InFlightDiagnostic diag = access->emitOpError();
    if (!bufferDeclared)
      diag << "accesses a buffer that is not in the "
           << (isWrite ? "writes" : "reads") << " of tl.block '"
           << op.getName() << "'";
    else
      diag << "access " << AffineMapAttr::get(*actual) << " does not match any declared "
           << (isWrite ? "write" : "read") << " region of tl.block '"
           << op.getName() << "'";
    return diag;
  };
  WalkResult result = block->walk([&](Operation *inner) -> WalkResult {
    if (isa<memref::LoadOp, memref::StoreOp>(inner))
      return inner->emitOpError("tl.block bodies access buffers through "
                                "affine.load/affine.store so that their "
                                "regions can be checked"),
             WalkResult::interrupt();
    if (auto load = dyn_cast<affine::AffineReadOpInterface>(inner))
      return failed(check(inner, load.getMemRef(), load.getAffineMap(),
                          load.getMapOperands(), /*isWrite=*/false))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    if (auto store = dyn_cast<affine::AffineWriteOpInterface>(inner))
      return failed(check(inner, store.getMemRef(), store.getAffineMap(),
                          store.getMapOperands(), /*isWrite=*/true))
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult BlockOp::verify() {
  unsigned n = getNumIters();
  if (getIterKinds().size() != n)
    return emitOpError("has ") << n << " iteration values but "
                               << getIterKinds().size() << " kinds";
  auto checkMaps = [&](OperandRange buffers, ArrayAttr maps,
                       StringRef what) -> LogicalResult {
    if (buffers.size() != maps.size())
      return emitOpError() << what << ": " << buffers.size() << " buffers but "
                           << maps.size() << " maps";
    for (auto [buffer, attr] : llvm::zip(buffers, maps)) {
      AffineMap map = llvm::cast<AffineMapAttr>(attr).getValue();
      auto type = llvm::cast<MemRefType>(buffer.getType());
      if (map.getNumDims() != n || map.getNumSymbols() != 0)
        return emitOpError() << what << " map " << AffineMapAttr::get(map) << " must have " << n
                             << " dims (one per iteration variable)";
      if (map.getNumResults() != type.getRank())
        return emitOpError() << what << " map " << AffineMapAttr::get(map) << " has "
                             << map.getNumResults()
                             << " results for a buffer of rank "
                             << type.getRank();
    }
    return success();
  };
  if (failed(checkMaps(getReads(), getReadMaps(), "reads")) ||
      failed(checkMaps(getWrites(), getWriteMaps(), "writes")))
    return failure();
  if (getWrites().empty())
    return emitOpError("a block must write at least one buffer");
  auto checkArgs = [&](Block *block, StringRef what) -> LogicalResult {
    if (block->getNumArguments() != n ||
        llvm::any_of(block->getArgumentTypes(),
                     [](Type t) { return !t.isIndex(); }))
      return emitOpError() << what << " must take " << n
                           << " index arguments (the iteration variables)";
    return success();
  };
  if (failed(checkArgs(getBodyBlock(), "body")))
    return failure();
  if (Block *init = getInitBlock()) {
    if (failed(checkArgs(init, "init")))
      return failure();
    if (!hasReduction())
      return emitOpError("has an init region but no reduction variable");
    if (failed(verifyAccesses(*this, init)))
      return failure();
  }
  return verifyAccesses(*this, getBodyBlock());
}

LogicalResult BlockOp::fold(FoldAdaptor, SmallVectorImpl<OpFoldResult> &) {
  return memref::foldMemRefCast(*this);
}

#define GET_OP_CLASSES
#include "Dialect/TL/IR/TLOps.cpp.inc"

//===----------------------------------------------------------------------===//
// PrefetchOp
//===----------------------------------------------------------------------===//

LogicalResult PrefetchOp::verify() {
  auto type = cast<MemRefType>(getBuffer().getType());
  if (type.getRank() == 0)
    return emitOpError("needs a buffer of rank 1 or more");
  if (!type.getLayout().isIdentity())
    return emitOpError("needs a buffer with the identity layout (contiguous "
                       "storage), got ")
           << type;
  if (getDistance() < 0 || getBytes() <= 0 || getLine() <= 0)
    return emitOpError("needs distance >= 0, bytes > 0 and line > 0");
  if (getLevel() < 1 || getLevel() > 3)
    return emitOpError("needs a cache level of 1, 2 or 3, got ") << getLevel();
  return success();
}

//===----------------------------------------------------------------------===//
// LibraryGemmOp
//===----------------------------------------------------------------------===//

LogicalResult LibraryGemmOp::verify() {
  // Each operand a row-major matrix: rank 2, unit stride along a row.
  auto matrix = [&](Value v, StringRef what,
                    bool f16) -> FailureOr<MemRefType> {
    auto t = cast<MemRefType>(v.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (t.getRank() != 2 || failed(t.getStridesAndOffset(strides, offset)) ||
        strides[1] != 1)
      return emitOpError("needs ")
             << what << " as a row-major matrix (rank 2, unit stride along "
             << "a row), got " << t;
    if (f16 ? !t.getElementType().isF16() : !t.getElementType().isF32())
      return emitOpError("needs ")
             << what << " of " << (f16 ? "f16" : "f32") << ", got " << t;
    return t;
  };
  FailureOr<MemRefType> a = matrix(getA(), "a", true);
  FailureOr<MemRefType> b = matrix(getB(), "b", true);
  FailureOr<MemRefType> out = matrix(getOut(), "out", false);
  if (failed(a) || failed(b) || failed(out))
    return failure();
  auto same = [](int64_t x, int64_t y) {
    return ShapedType::isDynamic(x) || ShapedType::isDynamic(y) || x == y;
  };
  if (!same(a->getDimSize(1), b->getDimSize(1)) ||
      !same(a->getDimSize(0), out->getDimSize(0)) ||
      !same(b->getDimSize(0), out->getDimSize(1)))
    return emitOpError("needs a: rows x k, b: columns x k and out: rows x "
                       "columns, got ")
           << *a << ", " << *b << " and " << *out;
  if (getInit()) {
    FailureOr<MemRefType> init = matrix(getInit(), "init", false);
    if (failed(init))
      return failure();
    if (!same(init->getDimSize(0), out->getDimSize(0)) ||
        !same(init->getDimSize(1), out->getDimSize(1)))
      return emitOpError("needs init of out's shape, got ") << *init;
  }
  double beta = getBeta().convertToDouble();
  if (beta != 0 && beta != 1)
    return emitOpError("needs beta 0 or 1, got ") << beta;
  if (getInit() && beta != 1)
    return emitOpError("needs beta 1 with init (the sums start at init's "
                       "values)");
  return success();
}

std::optional<int64_t> llmc::tl::threadAxisExtent(ForOp loop) {
  if (getConstantIntValue(loop.getLowerBound()) != 0 ||
      getConstantIntValue(loop.getStep()) != 1)
    return std::nullopt;
  Value ub = loop.getUpperBound();
  if (auto c = getConstantIntValue(ub))
    return c;
  Operation *def = ub.getDefiningOp();
  if (isa_and_nonnull<arith::MinUIOp, arith::MinSIOp>(def))
    for (Value o : def->getOperands())
      if (auto c = getConstantIntValue(o))
        return c;
  return std::nullopt;
}
