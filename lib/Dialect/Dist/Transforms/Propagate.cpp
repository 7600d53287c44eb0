//===- Propagate.cpp - shardings of every graph value ---------------------===//
//
// See the pass description (Passes.td): forward propagation through the
// graph dialect's ops, each op's rule in `resultLayout`.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Dist/Transforms/Passes.h"
#include "Dialect/Graph/IR/Graph.h"
#include "Layout.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

namespace llmc::dist {
#define GEN_PASS_DEF_DISTPROPAGATE
#include "Dialect/Dist/Transforms/Passes.h.inc"
} // namespace llmc::dist

using namespace mlir;
using namespace llmc;
using namespace llmc::dist;

namespace {

class Propagation {
public:
  Propagation(func::FuncOp func, MeshOp mesh, FlatSymbolRefAttr meshRef)
      : func(func), mesh(mesh), meshRef(meshRef) {}

  LogicalResult run() {
    SymbolTableCollection symbols;
    for (BlockArgument arg : func.getArguments())
      if (auto s = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                       kShardingAttrName)) {
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type)
          return func.emitError()
                 << "argument " << arg.getArgNumber()
                 << " has a sharding but is not a ranked tensor";
        if (failed(verifySharding(func, s, type, symbols)))
          return failure();
        set(arg, Layout::of(s));
      }
    for (Operation &op : func.getBody().front()) {
      if (auto shard = dyn_cast<ShardOp>(op)) {
        set(shard.getResult(), Layout::of(shard.getSharding()));
        continue;
      }
      // (A weight's layout is an annotation's or a product's inference.)
      if (!isa<graph::GraphDialect>(op.getDialect()) ||
          isa<graph::ParamOp>(op) || op.getNumResults() != 1 ||
          !isa<RankedTensorType>(op.getResult(0).getType()))
        continue;
      set(op.getResult(0), resultLayout(&op));
    }
    // Record every layout that is not replicated.
    for (Operation &op : func.getBody().front()) {
      if (isa<ShardOp>(op) || op.getNumResults() != 1)
        continue;
      auto it = known.find(op.getResult(0));
      if (it != known.end() && !it->second.isReplicated())
        op.setAttr(kShardingAttrName, it->second.toAttr(meshRef));
    }
    return success();
  }

private:
  func::FuncOp func;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  DenseMap<Value, Layout> known;

  int64_t ranks(ArrayRef<StringRef> axes) { return mesh.getGroupSize(axes); }

  Layout get(Value v) {
    auto it = known.find(v);
    if (it != known.end())
      return it->second;
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return Layout::replicated(type ? type.getRank() : 0);
  }

  /// Records `l` for `v` (if `v` has none), each axis kept at its first
  /// use, a split dropped where it does not divide a static dimension.
  void set(Value v, Layout l) {
    if (known.count(v))
      return;
    auto type = cast<RankedTensorType>(v.getType());
    l.dims.resize(type.getRank());
    llvm::StringSet<> seen;
    auto keep = [&](Axes &axes) {
      Axes out;
      for (StringRef a : axes)
        if (mesh.getAxisIndex(a) >= 0 && seen.insert(a).second)
          out.push_back(a);
      axes = out;
    };
    // A partial sum first: an axis both partial and splitting a dimension
    // stays partial (the numbers are sums over it), its split dropped.
    keep(l.partial);
    for (auto [d, axes] : llvm::enumerate(l.dims)) {
      keep(axes);
      if (!type.isDynamicDim(d) && type.getDimSize(d) % ranks(axes) != 0)
        axes.clear();
    }
    known[v] = std::move(l);
  }

  /// The leading dimensions of `l` (all but the last), as rows of a result.
  static SmallVector<Axes> rowsOf(const Layout &l) {
    return SmallVector<Axes>(l.dims.begin(), l.dims.end() - 1);
  }

  /// `operands` aligned from the right with a result of rank `rank`: each
  /// dimension split as the first operand that splits it.
  Layout aligned(ValueRange operands, int64_t rank) {
    Layout out = Layout::replicated(rank);
    for (Value v : operands) {
      Layout l = get(v);
      int64_t shift = rank - static_cast<int64_t>(l.dims.size());
      for (auto [d, axes] : llvm::enumerate(l.dims))
        if (shift + static_cast<int64_t>(d) >= 0 && out.dims[shift + d].empty())
          out.dims[shift + d] = axes;
    }
    return out;
  }

  /// An elementwise op's weights without a layout of their own (a bias, a
  /// scale) take the result's, aligned from the right: each rank holds the
  /// part its columns need.
  void sliceParams(Operation *op, const Layout &out) {
    for (Value v : op->getOperands()) {
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (!type || known.count(v) || !v.getDefiningOp<graph::ParamOp>())
        continue;
      Layout l;
      l.dims.assign(out.dims.end() - type.getRank(), out.dims.end());
      set(v, l);
    }
  }

  Layout resultLayout(Operation *op) {
    auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
    int64_t rank = resultType.getRank();
    if (auto mm = dyn_cast<graph::MatmulOp>(op)) {
      Layout x = get(mm.getInput());
      // An unsharded weight (a param) takes the split of the input's K,
      // unless that would split its quantized blocks (the input is then
      // gathered, the weight whole on every rank).
      auto wType = cast<RankedTensorType>(mm.getWeight().getType());
      Type element = wType.getElementType();
      int64_t block = graph::quantBlockBytes(element)
                          ? graph::quantBlockElements(element)
                          : 1;
      int64_t localK = wType.getDimSize(1) / ranks(x.dims.back());
      if (!known.count(mm.getWeight()) && !x.dims.back().empty() &&
          mm.getWeight().getDefiningOp<graph::ParamOp>() &&
          (block <= 1 || localK % block == 0)) {
        Layout w = Layout::replicated(2);
        w.dims[1] = x.dims.back();
        set(mm.getWeight(), w);
      }
      Layout w = get(mm.getWeight());
      Layout out;
      out.dims = rowsOf(x);
      out.dims.push_back(w.dims[0]);
      out.partial = w.dims[1];
      return out;
    }
    if (auto emb = dyn_cast<graph::EmbeddingOp>(op)) {
      Layout table = get(emb.getTable()), ids = get(emb.getIds());
      Layout out;
      out.dims = ids.dims;
      out.dims.push_back(table.dims[1]);
      out.partial = table.dims[0];
      return out;
    }
    if (auto norm = dyn_cast<graph::RMSNormOp>(op)) {
      Layout out;
      out.dims = rowsOf(get(norm.getInput()));
      out.dims.emplace_back();
      return out;
    }
    if (auto rope = dyn_cast<graph::RopeOp>(op)) {
      Layout in = get(rope.getInput());
      Layout out;
      out.dims = in.dims;
      // Rows whole: a row's angle is its position, pos0 + its index.
      out.dims.front().clear();
      int64_t features = resultType.getShape().back();
      int64_t n = ranks(in.dims.back());
      if (ShapedType::isDynamic(features) || features % n != 0 ||
          (features / n) % rope.getHeadDim() != 0)
        out.dims.back().clear();
      return out;
    }
    if (auto attn = dyn_cast<graph::AttentionOp>(op)) {
      Layout q = get(attn.getQ()), k = get(attn.getK()), v = get(attn.getV());
      Layout out;
      out.dims = q.dims;
      // Rows whole: a row attends to every earlier row's keys and values.
      out.dims.front().clear();
      Axes heads = q.dims.back();
      int64_t n = ranks(heads);
      auto alike = [&](const Layout &l) {
        return l.dims.back().empty() || l.dims.back() == heads;
      };
      if (!alike(k) || !alike(v) || attn.getNumHeads() % n != 0 ||
          attn.getNumKvHeads() % n != 0)
        out.dims.back().clear();
      return out;
    }
    if (auto add = dyn_cast<graph::AddOp>(op)) {
      Layout out = aligned(op->getOperands(), rank);
      sliceParams(op, out);
      Layout l = get(add.getLhs()), r = get(add.getRhs());
      if (!l.partial.empty() && l.partial == r.partial)
        out.partial = l.partial;
      return out;
    }
    if (isa<graph::MulOp, graph::SiluOp, graph::ElementwiseOp>(op)) {
      Layout out = aligned(op->getOperands(), rank);
      sliceParams(op, out);
      return out;
    }
    if (auto reshape = dyn_cast<graph::ReshapeOp>(op)) {
      Layout in = get(reshape.getInput());
      Layout out = Layout::replicated(rank);
      out.dims[0] = in.dims[0];
      auto inType = cast<RankedTensorType>(reshape.getInput().getType());
      // The split of the input's first trailing dimension (or of its last,
      // when it is the only one) goes to the result's first trailing one.
      if (inType.getRank() >= 2 && rank >= 2 &&
          (inType.getRank() == 2 || in.dims.back().empty()))
        out.dims[1] = in.dims[1];
      return out;
    }
    if (auto rows = dyn_cast<graph::LastRowsOp>(op)) {
      // (Linear: a partial sum's last rows are the last rows' partial sum.)
      Layout in = get(rows.getInput());
      in.dims.front().clear();
      return in;
    }
    return Layout::replicated(rank);
  }
};

/// The one mesh a function's annotations use; null where it has none, and
/// failure (with an error) where they name several.
FailureOr<FlatSymbolRefAttr> meshOf(func::FuncOp func) {
  FlatSymbolRefAttr mesh;
  Operation *first = nullptr;
  auto note = [&](ShardingAttr s, Operation *at) -> LogicalResult {
    if (!mesh) {
      mesh = s.getMesh();
      first = at;
      return success();
    }
    if (mesh == s.getMesh())
      return success();
    InFlightDiagnostic d = at->emitError()
                           << "shardings on two meshes in one function ("
                           << mesh << " and " << s.getMesh() << ")";
    d.attachNote(first->getLoc()) << "the first";
    return failure();
  };
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto s = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttrName))
      if (failed(note(s, func)))
        return failure();
  WalkResult r = func.walk([&](ShardOp op) {
    return failed(note(op.getSharding(), op)) ? WalkResult::interrupt()
                                              : WalkResult::advance();
  });
  if (r.wasInterrupted())
    return failure();
  return mesh;
}

struct DistPropagatePass
    : llmc::dist::impl::DistPropagateBase<DistPropagatePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      FailureOr<FlatSymbolRefAttr> meshRef = meshOf(func);
      if (failed(meshRef))
        return signalPassFailure();
      if (!*meshRef)
        continue;
      MeshOp mesh = lookupMesh(func, *meshRef);
      if (!mesh) {
        func.emitError() << "shardings name " << *meshRef
                         << ", which is not a dist.mesh";
        return signalPassFailure();
      }
      if (failed(Propagation(func, mesh, *meshRef).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
