//===- GraphOps.cpp - graph dialect op verifiers and folders --------------===//
#include "Dialect/Graph/IR/Graph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace llmc::graph;

/// True when `a` and `b` may be equal: equal, or one of them dynamic.
static bool compatibleDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("parameter name must not be empty");
  auto type = getResult().getType();
  if (!type.hasStaticShape())
    return emitOpError("parameter '") << getName()
                                      << "' must have a static shape, got "
                                      << type;
  Type element = type.getElementType();
  bool quantized = quantBlockBytes(element) != 0;
  if (quantized && type.getShape().back() % quantBlockElements(element))
    return emitOpError("parameter '")
           << getName() << "': " << element << " rows must be a multiple of "
           << quantBlockElements(element) << " long, got "
           << type.getShape().back();
  if (auto source = getSourceAttr()) {
    Type dtype = source.getDtype();
    // Quantized and 16-bit parameters keep their stored type; f32 ones may
    // be widened from f16/bf16 by the artifact writer.
    bool ok = element.isF32()
                  ? (dtype.isF32() || dtype.isF16() || dtype.isBF16())
                  : dtype == element;
    if (!ok)
      return emitOpError("parameter '")
             << getName() << "' is stored as " << dtype
             << (quantized ? "; a quantized parameter is stored as its own "
                             "element type"
                           : element.isF32()
                               ? "; supported stored types are f32, f16 and bf16"
                               : "; a 16-bit parameter is stored as its own "
                                 "element type");
  }
  if (auto offset = getBlobOffset())
    if (*offset < 0)
      return emitOpError("blob_offset must be non-negative");
  if (Attribute encoding = type.getEncoding()) {
    auto layout = llvm::dyn_cast<InterleavedAttr>(encoding);
    if (!layout)
      return emitOpError("parameter '")
             << getName() << "' has an unknown layout " << encoding;
    int64_t header = quantHeaderBytes(element);
    bool floats = isInterleavableFloat(element);
    if ((!header && !floats) || type.getRank() != 2)
      return emitOpError("parameter '")
             << getName()
             << "': only matrices of f32, f16, bf16 or of Q8_0, Q4_0, Q4_K "
                "or Q6_K blocks are interleaved, got "
             << type;
    if (floats) {
      // A float's block is the element: its bytes one chunk.
      int64_t bytes = element.getIntOrFloatBitWidth() / 8;
      if (layout.getRows() <= 0 || type.getDimSize(0) % layout.getRows() ||
          layout.getChunk() != bytes)
        return emitOpError("parameter '")
               << getName() << "': " << layout
               << " needs rows that divide the matrix's " << type.getDimSize(0)
               << " and a chunk of one element's " << bytes << " bytes";
      return success();
    }
    int64_t quants = quantBlockBytes(element) - header;
    if (layout.getRows() <= 0 || type.getDimSize(0) % layout.getRows() ||
        layout.getChunk() <= 0 || quants % layout.getChunk())
      return emitOpError("parameter '")
             << getName() << "': " << layout
             << " needs rows that divide the matrix's " << type.getDimSize(0)
             << " and a chunk that divides a block's " << quants
             << " quant bytes";
  }
  return success();
}

int64_t llmc::graph::quantBlockBytes(Type elementType) {
  if (llvm::isa<Q8_0Type>(elementType))
    return 34;
  if (llvm::isa<Q4_0Type>(elementType))
    return 18;
  if (llvm::isa<Q6_KType>(elementType))
    return 210;
  if (llvm::isa<Q4_KType>(elementType))
    return 144;
  return 0;
}

int64_t llmc::graph::quantHeaderBytes(Type elementType) {
  if (llvm::isa<Q8_0Type, Q4_0Type>(elementType))
    return 2; // d
  if (llvm::isa<Q4_KType>(elementType))
    return 16; // d, dmin, 12 bytes of 6-bit scales and mins
  if (llvm::isa<Q6_KType>(elementType))
    return 18; // 16 int8 sub-block scales, d
  return 0;
}

int64_t llmc::graph::quantHeaderStart(Type elementType) {
  return llvm::isa<Q6_KType>(elementType) ? 192 : 0; // after ql, qh
}

InterleavedAttr llmc::graph::getInterleaving(RankedTensorType type) {
  return llvm::dyn_cast_if_present<InterleavedAttr>(type.getEncoding());
}

bool llmc::graph::isInterleavableFloat(Type elementType) {
  return elementType.isF32() || elementType.isF16() || elementType.isBF16();
}

int64_t llmc::graph::interleavedOffset(InterleavedAttr layout, Type element,
                                       int64_t blocksPerRow, int64_t row,
                                       int64_t block, int64_t byte) {
  int64_t rows = layout.getRows(), chunk = layout.getChunk();
  int64_t header = quantHeaderBytes(element);
  // (A float's block is one element, no header.)
  int64_t blockBytes = isInterleavableFloat(element)
                           ? element.getIntOrFloatBitWidth() / 8
                           : quantBlockBytes(element);
  int64_t base = ((row / rows) * blocksPerRow + block) * rows * blockBytes;
  int64_t r = row % rows;
  int64_t start = quantHeaderStart(element);
  if (byte >= start && byte < start + header)
    return base + (byte - start) * rows + r;
  int64_t j = byte < start ? byte : byte - header; // the quant byte
  return base + header * rows + (j / chunk * rows + r) * chunk + j % chunk;
}

int64_t llmc::graph::quantBlockElements(Type elementType) {
  return llvm::isa<Q6_KType, Q4_KType>(elementType) ? 256 : 32;
}

int64_t llmc::graph::storageBytes(RankedTensorType type) {
  if (int64_t block = quantBlockBytes(type.getElementType()))
    return type.getNumElements() / quantBlockElements(type.getElementType()) *
           block;
  return type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  auto table = getTable().getType();
  auto ids = getIds().getType();
  auto result = getResult().getType();
  if (table.getRank() != 2)
    return emitOpError("table must be rank 2 [vocab, dim], got ") << table;
  if (result.getRank() != ids.getRank() + 1)
    return emitOpError("result rank must be ids rank + 1");
  for (int64_t i = 0; i < ids.getRank(); ++i)
    if (!compatibleDim(ids.getDimSize(i), result.getDimSize(i)))
      return emitOpError("result dimension ") << i << " does not match ids";
  if (!compatibleDim(result.getShape().back(), table.getDimSize(1)))
    return emitOpError("result row size ")
           << result.getShape().back() << " does not match table row size "
           << table.getDimSize(1);
  // A tied output head's table is interleaved like the product's weight.
  if (Attribute encoding = table.getEncoding()) {
    auto layout = llvm::dyn_cast<InterleavedAttr>(encoding);
    if (!layout ||
        (!quantHeaderBytes(table.getElementType()) &&
         !isInterleavableFloat(table.getElementType())) ||
        layout.getRows() <= 0 || table.isDynamicDim(0) ||
        table.getDimSize(0) % layout.getRows())
      return emitOpError("the table must be plain or rows interleaved in "
                         "groups that divide them, got ")
             << table;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  auto input = getInput().getType();
  auto weight = getWeight().getType();
  if (input != getResult().getType())
    return emitOpError("result type must equal the input type");
  if (weight.getRank() != 1 ||
      !compatibleDim(weight.getDimSize(0), input.getShape().back()))
    return emitOpError("weight must be a vector of the last input dimension (")
           << input.getShape().back() << "), got " << weight;
  if (ShapedType::isDynamic(input.getShape().back()))
    return emitOpError("the normalised dimension must be static");
  if (!(getEps().convertToFloat() > 0.0f))
    return emitOpError("eps must be positive");
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  auto input = getInput().getType();
  auto weight = getWeight().getType();
  auto result = getResult().getType();
  if (weight.getRank() != 2)
    return emitOpError("weight must be rank 2 [out, in], got ") << weight;
  if (input.getRank() < 1 || result.getRank() != input.getRank())
    return emitOpError("input and result must have the same rank >= 1");
  if (!compatibleDim(input.getShape().back(), weight.getDimSize(1)))
    return emitOpError("contraction size mismatch: input has ")
           << input.getShape().back() << ", weight [out, in] has "
           << weight.getDimSize(1);
  if (!compatibleDim(result.getShape().back(), weight.getDimSize(0)))
    return emitOpError("result size ")
           << result.getShape().back() << " does not match weight rows "
           << weight.getDimSize(0);
  for (int64_t i = 0; i + 1 < input.getRank(); ++i)
    if (!compatibleDim(input.getDimSize(i), result.getDimSize(i)))
      return emitOpError("result dimension ") << i << " does not match input";
  if (std::optional<Type> act = getActType()) {
    Type w = weight.getElementType();
    bool ok = act->isF16() || act->isBF16() ||
              (llvm::isa<Q8_0Type>(*act) && llvm::isa<Q8_0Type, Q4_0Type>(w)) ||
              (llvm::isa<Q8_KType>(*act) && llvm::isa<Q4_KType, Q6_KType>(w));
    if (!ok)
      return emitOpError("act_type ")
             << *act << " does not fit a weight of " << w
             << " (f16 or bf16 with any weight, !graph.q8_0 with Q8_0/Q4_0, "
                "!graph.q8_k with Q4_K/Q6_K)";
  }
  // Interleaved blocks are read by the integer products of llama.cpp's
  // numerics (the layout serves their lanes); interleaved floats by the
  // exact mode's products, the outputs in lanes.
  if (getInterleaving(weight)) {
    bool floats = isInterleavableFloat(weight.getElementType());
    if (floats && getActType())
      return emitOpError("an interleaved float weight is read by f32 "
                         "products (no act_type), got act_type ")
             << *getActType();
    if (!floats &&
        !(getActType() && llvm::isa<Q8_0Type, Q8_KType>(*getActType())))
      return emitOpError("an interleaved weight needs an 8-bit act_type "
                         "(!graph.q8_0, !graph.q8_k), got ")
             << weight;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AddOp / MulOp
//===----------------------------------------------------------------------===//

static LogicalResult verifyBroadcastBinary(Operation *op, RankedTensorType lhs,
                                           RankedTensorType rhs,
                                           RankedTensorType result) {
  if (lhs != result)
    return op->emitOpError("result type must equal the lhs type");
  if (rhs.getRank() > lhs.getRank())
    return op->emitOpError("rhs rank must not exceed lhs rank");
  int64_t off = lhs.getRank() - rhs.getRank();
  for (int64_t i = 0; i < rhs.getRank(); ++i)
    if (!compatibleDim(rhs.getDimSize(i), lhs.getDimSize(off + i)))
      return op->emitOpError("rhs shape ")
             << rhs << " is not the trailing shape of lhs " << lhs;
  return success();
}

LogicalResult AddOp::verify() {
  return verifyBroadcastBinary(*this, getLhs().getType(), getRhs().getType(),
                               getResult().getType());
}
LogicalResult MulOp::verify() {
  return verifyBroadcastBinary(*this, getLhs().getType(), getRhs().getType(),
                               getResult().getType());
}

//===----------------------------------------------------------------------===//
// ElementwiseOp
//===----------------------------------------------------------------------===//

bool llmc::graph::isFusableElementwise(Operation *op) {
  return isa<SiluOp, AddOp, MulOp>(op);
}

LogicalResult ElementwiseOp::verify() {
  Block &body = getBody().front();
  RankedTensorType result = getResult().getType();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ")
           << body.getNumArguments() << " arguments for "
           << getInputs().size() << " inputs";
  for (auto [arg, input] : llvm::zip(body.getArguments(), getInputs())) {
    if (arg.getType() != input.getType())
      return emitOpError("body argument type ")
             << arg.getType() << " differs from its input's " << input.getType();
    auto type = llvm::cast<RankedTensorType>(input.getType());
    int64_t off = result.getRank() - type.getRank();
    bool trailing = off >= 0;
    for (int64_t i = 0; trailing && i < type.getRank(); ++i)
      trailing = compatibleDim(type.getDimSize(i), result.getDimSize(off + i));
    if (!trailing)
      return emitOpError("input ")
             << type << " is not of the result's trailing shape " << result;
  }
  if (llvm::none_of(getInputs(),
                    [&](Value v) { return v.getType() == result; }))
    return emitOpError("needs an input of the result's type ") << result;
  auto yield = body.empty() ? YieldOp() : dyn_cast<YieldOp>(body.back());
  if (!yield)
    return emitOpError("body must end in graph.yield");
  for (Operation &op : body.without_terminator()) {
    if (!isFusableElementwise(&op))
      return op.emitOpError("cannot be fused into graph.elementwise (only "
                            "graph.silu, graph.add and graph.mul)");
    if (op.getResult(0).getType() != result)
      return op.emitOpError("computes ")
             << op.getResult(0).getType()
             << " in a graph.elementwise of result type " << result;
  }
  if (yield.getValue().getType() != result)
    return emitOpError("yields ")
           << yield.getValue().getType() << " for a result of type " << result;
  return success();
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  auto input = getInput().getType();
  if (input != getResult().getType())
    return emitOpError("result type must equal the input type");
  int64_t hd = getHeadDim();
  if (hd <= 0 || hd % 2)
    return emitOpError("head_dim must be positive and even, got ") << hd;
  int64_t width = input.getShape().back();
  if (ShapedType::isDynamic(width) || width % hd)
    return emitOpError("last dimension (")
           << width << ") must be a static multiple of head_dim " << hd;
  if (input.getRank() != 2)
    return emitOpError("input must be [seq, heads * head_dim]");
  if (!(getTheta().convertToDouble() > 0.0))
    return emitOpError("theta must be positive");
  if (bool(getNormWeight()) != bool(getNormEpsAttr()))
    return emitOpError("norm and norm_eps come together");
  if (Value g = getNormWeight()) {
    auto gType = llvm::cast<RankedTensorType>(g.getType());
    if (gType.getRank() != 1 || gType.getDimSize(0) != hd)
      return emitOpError("norm weight must be a vector of head_dim (")
             << hd << "), got " << gType;
    if (!(getNormEpsAttr().getValueAsDouble() > 0.0))
      return emitOpError("norm_eps must be positive");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  auto cache = llvm::cast<KVCacheType>(getCache().getType());
  int64_t nh = getNumHeads(), nkv = getNumKvHeads(), hd = getHeadDim();
  if (nh <= 0 || nkv <= 0 || nh % nkv)
    return emitOpError("num_heads (")
           << nh << ") must be a positive multiple of num_kv_heads (" << nkv
           << ")";
  if (nkv != cache.getKvHeads() || hd != cache.getHeadDim())
    return emitOpError("num_kv_heads/head_dim (")
           << nkv << ", " << hd << ") do not match the cache ("
           << cache.getKvHeads() << ", " << cache.getHeadDim() << ")";
  // The getters are unsigned: the attributes' signed values.
  int64_t kvPad = getKvPadAttr().getInt(), kvTile = getKvTileAttr().getInt();
  int64_t runs = getSoftmaxBlockAttr().getInt();
  if (kvPad < 1)
    return emitOpError("kv_pad must be at least 1, got ") << kvPad;
  if (runs < 0)
    return emitOpError("softmax_block must be 0 or positive, got ") << runs;
  if (kvTile < 0)
    return emitOpError("kv_tile must be 0 or positive, got ") << kvTile;
  if (kvTile > 0 && kvTile % kvPad)
    return emitOpError("kv_tile (")
           << kvTile << ") must be a multiple of kv_pad (" << kvPad << ")";
  int64_t splits = getKvSplitsAttr().getInt();
  if (splits < 1)
    return emitOpError("kv_splits must be at least 1, got ") << splits;
  if (splits > 1 && kvTile == 0)
    return emitOpError("kv_splits (")
           << splits << ") needs flash attention (kv_tile > 0)";
  if (getRowTiles() && kvTile == 0)
    return emitOpError("row_tiles needs flash attention (kv_tile > 0)");
  int64_t qTile = getQTileAttr().getInt();
  if (qTile < 1)
    return emitOpError("q_tile must be at least 1, got ") << qTile;
  if (qTile > 1 && getRowTiles())
    return emitOpError("q_tile (") << qTile << ") excludes row_tiles";
  if (kvTile > 0 && runs > 0)
    return emitOpError("kv_tile (online softmax) and softmax_block (two "
                       "passes) exclude each other");
  int64_t layer = getLayerAttr().getInt();
  if (layer < 0 || layer >= cache.getLayers())
    return emitOpError("layer ")
           << layer << " is out of range [0, " << cache.getLayers() << ")";
  auto check = [&](Value v, StringRef what, int64_t heads) -> LogicalResult {
    auto t = llvm::cast<RankedTensorType>(v.getType());
    if (t.getRank() != 2 || !compatibleDim(t.getDimSize(1), heads * hd))
      return emitOpError() << what << " must be [seq, " << heads * hd
                           << "], got " << t;
    if (!compatibleDim(t.getDimSize(0), getQ().getType().getDimSize(0)))
      return emitOpError() << what << " and q differ in sequence length";
    return success();
  };
  if (failed(check(getQ(), "q", nh)) || failed(check(getK(), "k", nkv)) ||
      failed(check(getV(), "v", nkv)) ||
      failed(check(getResult(), "result", nh)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// The static number of elements of the trailing dims, or nullopt.
static std::optional<int64_t> trailingElements(RankedTensorType t) {
  int64_t n = 1;
  for (int64_t d : t.getShape().drop_front()) {
    if (ShapedType::isDynamic(d))
      return std::nullopt;
    n *= d;
  }
  return n;
}

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getRank() < 1 || out.getRank() < 1)
    return emitOpError("operand and result must have rank >= 1");
  if (!compatibleDim(in.getDimSize(0), out.getDimSize(0)))
    return emitOpError("leading dimension must be kept");
  auto a = trailingElements(in), b = trailingElements(out);
  if (!a || !b)
    return emitOpError("trailing dimensions must be static");
  if (*a != *b)
    return emitOpError("trailing dimensions hold ")
           << *a << " elements in the operand but " << *b << " in the result";
  return success();
}

LogicalResult LastRowsOp::verify() {
  auto type = getInput().getType();
  if (type.getRank() < 1 || !type.isDynamicDim(0))
    return emitOpError("operand must have a dynamic leading (row) dimension");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getResult().getType())
    return getInput();
  return {};
}

namespace {
/// reshape(reshape(x)) -> reshape(x): only the final shape matters.
struct ComposeReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    if (!inner)
      return rewriter.notifyMatchFailure(op, "operand is not a reshape");
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getInput());
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<ComposeReshapes>(context);
}

#define GET_OP_CLASSES
#include "Dialect/Graph/IR/GraphOps.cpp.inc"
