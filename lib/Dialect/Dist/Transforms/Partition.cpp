//===- Partition.cpp - per-rank programs with explicit collectives -------===//
//
// See the pass description (Passes.td). The function is rewritten in place,
// in program order: each op's operands are brought to the layouts the op
// needs (a collective where they differ), then its result takes the local
// type of its recorded layout.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Dist/Transforms/Passes.h"
#include "Dialect/Graph/IR/Graph.h"
#include "Layout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace llmc::dist {
#define GEN_PASS_DEF_DISTPARTITION
#include "Dialect/Dist/Transforms/Passes.h.inc"
} // namespace llmc::dist

using namespace mlir;
using namespace llmc;
using namespace llmc::dist;

namespace {

class Partitioner {
public:
  Partitioner(func::FuncOp func, MeshOp mesh, FlatSymbolRefAttr meshRef)
      : func(func), mesh(mesh), meshRef(meshRef), b(func.getContext()) {}

  LogicalResult run() {
    for (BlockArgument arg : func.getArguments())
      if (auto s = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                       kShardingAttrName)) {
        if (!Layout::of(s).isReplicated())
          return func.emitError()
                 << "dist-partition: argument " << arg.getArgNumber()
                 << " is sharded; the entry's arguments must be whole";
        func.removeArgAttr(arg.getArgNumber(), kShardingAttrName);
      }
    // Weights first: a param's layout is its own (inferred from a product)
    // or the one its dist.shard annotations give it, whichever op reads it
    // first.
    WalkResult sliced = func.walk([&](Operation *op) {
      if (auto param = dyn_cast<graph::ParamOp>(op))
        if (auto s = param->getAttrOfType<ShardingAttr>(kShardingAttrName))
          if (failed(sliceParam(param, Layout::of(s))))
            return WalkResult::interrupt();
      if (auto shard = dyn_cast<ShardOp>(op))
        if (auto param = shard.getInput().getDefiningOp<graph::ParamOp>())
          if (!layouts.count(param.getResult()) &&
              failed(sliceParam(param, Layout::of(shard.getSharding()))))
            return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (sliced.wasInterrupted())
      return failure();
    // (Collect first: ops are inserted and erased as the walk goes.)
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      ops.push_back(&op);
    for (Operation *op : ops)
      if (failed(partition(op)))
        return failure();
    if (failed(localCache()))
      return failure();
    // Arguments' types (the cache) changed.
    func.setType(FunctionType::get(func.getContext(),
                                   func.getBody().front().getArgumentTypes(),
                                   func.getFunctionType().getResults()));
    return success();
  }

private:
  func::FuncOp func;
  MeshOp mesh;
  FlatSymbolRefAttr meshRef;
  OpBuilder b;
  /// The layout of each value as it now is (its local type).
  DenseMap<Value, Layout> layouts;
  /// The ranks each attention's heads split over (all must agree: one
  /// cache).
  int64_t kvSplit = 0;
  Operation *firstAttention = nullptr;

  int64_t ranks(ArrayRef<StringRef> axes) { return mesh.getGroupSize(axes); }

  ArrayAttr axesAttr(ArrayRef<StringRef> axes) {
    SmallVector<Attribute> names;
    for (StringRef a : axes)
      names.push_back(b.getStringAttr(a));
    return b.getArrayAttr(names);
  }

  Layout layoutOf(Value v) {
    auto it = layouts.find(v);
    if (it != layouts.end())
      return it->second;
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return Layout::replicated(type ? type.getRank() : 0);
  }

  /// The recorded layout of `op`'s result (dist-propagate's attribute).
  Layout recorded(Operation *op) {
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    if (auto s = op->getAttrOfType<ShardingAttr>(kShardingAttrName))
      return Layout::of(s);
    return Layout::replicated(type.getRank());
  }

  /// `whole` with each split dimension divided by its axes' ranks.
  RankedTensorType localType(RankedTensorType whole, const Layout &l) {
    SmallVector<int64_t> shape(whole.getShape());
    for (auto [d, axes] : llvm::enumerate(l.dims))
      if (!ShapedType::isDynamic(shape[d]))
        shape[d] /= ranks(axes);
    return RankedTensorType::get(shape, whole.getElementType(),
                                 whole.getEncoding());
  }

  /// `t` (local under `from`) with dimension `d` multiplied by `n`.
  static RankedTensorType grown(RankedTensorType t, int64_t d, int64_t n) {
    SmallVector<int64_t> shape(t.getShape());
    if (!ShapedType::isDynamic(shape[d]))
      shape[d] *= n;
    return RankedTensorType::get(shape, t.getElementType(), t.getEncoding());
  }

  /// `v` (laid out as recorded) brought to layout `to` before `at`: partial
  /// axes `to` does not have summed (all_reduce), split dimensions `to`
  /// has whole gathered (all_gather).
  FailureOr<Value> convert(Value v, const Layout &to, Operation *at) {
    Layout from = layoutOf(v);
    if (from == to)
      return v;
    // (One collective for every op that needs the same layout of `v`: the
    // first, inserted before the first of them in program order, dominates
    // the others.)
    for (auto &[layout, done] : converted[v])
      if (layout == to)
        return done;
    Value original = v;
    b.setInsertionPoint(at);
    Location loc = at->getLoc();
    Axes sum;
    for (StringRef a : from.partial)
      if (!llvm::is_contained(to.partial, a))
        sum.push_back(a);
    for (StringRef a : to.partial)
      if (!llvm::is_contained(from.partial, a))
        return at->emitOpError()
               << "dist-partition: an operand must be a partial sum over '" << a
               << "', which it is not";
    if (!sum.empty()) {
      v = AllReduceOp::create(
          b, loc, v.getType(), v, meshRef, axesAttr(sum),
          ReductionKindAttr::get(b.getContext(), ReductionKind::sum));
      from.partial = to.partial;
    }
    for (auto [d, axes] : llvm::enumerate(from.dims)) {
      if (axes == to.dims[d])
        continue;
      if (!to.dims[d].empty())
        return at->emitOpError()
               << "dist-partition: operand dimension " << d
               << " must be split over " << llvm::join(to.dims[d], ",")
               << ", which would take a slice of a value every rank holds "
                  "whole or another split (not supported)";
      auto type = cast<RankedTensorType>(v.getType());
      v = AllGatherOp::create(b, loc, grown(type, d, ranks(axes)), v, meshRef,
                              axesAttr(axes), b.getI64IntegerAttr(d));
      from.dims[d].clear();
    }
    layouts[v] = from;
    converted[original].push_back({to, v});
    return v;
  }
  DenseMap<Value, SmallVector<std::pair<Layout, Value>, 1>> converted;

  /// Brings operand `i` of `op` to `to`.
  LogicalResult need(Operation *op, unsigned i, const Layout &to) {
    FailureOr<Value> v = convert(op->getOperand(i), to, op);
    if (failed(v))
      return failure();
    op->setOperand(i, *v);
    return success();
  }

  /// Sets `op`'s (single) result to layout `l` and its local type.
  void setResult(Operation *op, const Layout &l) {
    Value r = op->getResult(0);
    r.setType(localType(cast<RankedTensorType>(r.getType()), l));
    op->removeAttr(kShardingAttrName);
    if (!l.isReplicated())
      layouts[r] = l;
  }

  /// `l` for an operand of rank `rank` aligned from the right.
  static Layout trailing(const Layout &l, int64_t rank) {
    Layout out;
    out.dims.assign(l.dims.end() - rank, l.dims.end());
    out.partial = l.partial;
    return out;
  }

  LogicalResult partition(Operation *op) {
    if (auto shard = dyn_cast<ShardOp>(op))
      return partitionShard(shard);
    if (auto param = dyn_cast<graph::ParamOp>(op)) {
      // (Sliced before the walk; a second param of the same name, as the
      // first.)
      auto it = paramLayouts.find(param.getName());
      if (it != paramLayouts.end())
        return sliceParam(param, it->second);
      return success();
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (auto [i, v] : llvm::enumerate(ret.getOperands()))
        if (auto type = dyn_cast<RankedTensorType>(v.getType()))
          if (failed(need(op, i, Layout::replicated(type.getRank()))))
            return failure();
      return success();
    }
    if (isa<SendOp>(op))
      return need(
          op, 0,
          Layout::replicated(
              cast<RankedTensorType>(op->getOperand(0).getType()).getRank()));
    if (!isa<graph::GraphDialect>(op->getDialect()))
      return success();
    if (auto fused = dyn_cast<graph::ElementwiseOp>(op))
      return partitionElementwise(fused);
    if (op->getNumResults() != 1 ||
        !isa<RankedTensorType>(op->getResult(0).getType())) {
      // (Every tensor operand whole.)
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (auto type = dyn_cast<RankedTensorType>(v.getType()))
          if (failed(need(op, i, Layout::replicated(type.getRank()))))
            return failure();
      return success();
    }
    Layout r = recorded(op);
    auto whole = [](Value v) {
      return Layout::replicated(cast<RankedTensorType>(v.getType()).getRank());
    };
    if (auto mm = dyn_cast<graph::MatmulOp>(op)) {
      Layout w = layoutOf(mm.getWeight());
      Layout x = whole(mm.getInput());
      x.dims.assign(r.dims.begin(), r.dims.end() - 1);
      x.dims.push_back(w.dims[1]);
      if (failed(need(op, 0, x)))
        return failure();
      r.dims.back() = w.dims[0];
      r.partial = w.dims[1];
      setResult(op, r);
      return success();
    }
    if (auto emb = dyn_cast<graph::EmbeddingOp>(op))
      return partitionEmbedding(emb, r);
    if (auto norm = dyn_cast<graph::RMSNormOp>(op)) {
      Layout x = r;
      x.dims.back().clear();
      x.partial.clear();
      if (failed(need(op, 0, x)) ||
          failed(need(op, 1, whole(norm.getWeight()))))
        return failure();
      setResult(op, x);
      return success();
    }
    if (auto rope = dyn_cast<graph::RopeOp>(op)) {
      r.partial.clear();
      if (failed(need(op, 0, r)))
        return failure();
      if (rope.getNormWeight() &&
          failed(need(op, 2, whole(rope.getNormWeight()))))
        return failure();
      setResult(op, r);
      return success();
    }
    if (auto attn = dyn_cast<graph::AttentionOp>(op))
      return partitionAttention(attn, r);
    if (isa<graph::AddOp, graph::MulOp, graph::SiluOp>(op)) {
      if (!isa<graph::AddOp>(op))
        r.partial.clear();
      for (auto [i, v] : llvm::enumerate(op->getOperands()))
        if (failed(need(
                op, i,
                trailing(r, cast<RankedTensorType>(v.getType()).getRank()))))
          return failure();
      setResult(op, r);
      return success();
    }
    if (auto reshape = dyn_cast<graph::ReshapeOp>(op)) {
      Layout x = whole(reshape.getInput());
      x.dims[0] = r.dims[0];
      if (x.dims.size() >= 2 && r.dims.size() >= 2)
        x.dims[1] = r.dims[1];
      r.partial.clear();
      if (failed(need(op, 0, x)))
        return failure();
      setResult(op, r);
      return success();
    }
    if (isa<graph::LastRowsOp>(op)) {
      if (failed(need(op, 0, r)))
        return failure();
      setResult(op, r);
      return success();
    }
    // Any other op: whole operands and result.
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (auto type = dyn_cast<RankedTensorType>(v.getType()))
        if (failed(need(op, i, Layout::replicated(type.getRank()))))
          return failure();
    setResult(op, whole(op->getResult(0)));
    return success();
  }

  /// A fused elementwise op: its inputs as its result (never partial: its
  /// body need not be linear), and every tensor of its body local.
  LogicalResult partitionElementwise(graph::ElementwiseOp op) {
    Layout r = recorded(op);
    r.partial.clear();
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (failed(
              need(op, i,
                   trailing(r, cast<RankedTensorType>(v.getType()).getRank()))))
        return failure();
    auto local = [&](Value v) {
      if (auto t = dyn_cast<RankedTensorType>(v.getType()))
        v.setType(localType(t, trailing(r, t.getRank())));
    };
    op->walk([&](Operation *inner) {
      for (Region &region : inner->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments())
            local(arg);
      if (inner != op)
        for (Value v : inner->getResults())
          local(v);
    });
    setResult(op, r);
    return success();
  }

  /// A param's local type under `l`; a param two shardings give (by name)
  /// is an error.
  LogicalResult sliceParam(graph::ParamOp param, const Layout &l) {
    auto [it, inserted] = paramLayouts.try_emplace(param.getName(), l);
    if (!inserted && !(it->second == l))
      return param.emitOpError() << "dist-partition: parameter '"
                                 << param.getName() << "' is sharded two ways";
    if (layouts.count(param.getResult()))
      return success();
    auto type = param.getResult().getType();
    param.getResult().setType(localType(type, l));
    param->setAttr(kShardingAttrName, l.toAttr(meshRef));
    if (!l.isReplicated())
      layouts[param.getResult()] = l;
    return success();
  }
  llvm::StringMap<Layout> paramLayouts;

  LogicalResult partitionShard(ShardOp shard) {
    Layout to = Layout::of(shard.getSharding());
    Value in = shard.getInput();
    // (A weight's annotation that agrees with its slice is the slice.)
    FailureOr<Value> v = convert(in, to, shard);
    if (failed(v))
      return failure();
    shard.getResult().replaceAllUsesWith(*v);
    shard.erase();
    return success();
  }

  LogicalResult partitionEmbedding(graph::EmbeddingOp emb, Layout r) {
    Layout table = layoutOf(emb.getTable());
    auto ids = cast<RankedTensorType>(emb.getIds().getType());
    if (failed(need(emb, 1, Layout::replicated(ids.getRank()))))
      return failure();
    if (!table.dims[0].empty()) {
      // The rank's rows of a vocabulary-parallel table start at its
      // position along the rows' axes times their number.
      b.setInsertionPoint(emb);
      Location loc = emb.getLoc();
      Value pos = AxisIndexOp::create(b, loc, b.getIndexType(), meshRef,
                                      axesAttr(table.dims[0]));
      int64_t rows = emb.getTable().getType().getDimSize(0);
      Value offset = arith::MulIOp::create(
          b, loc, pos, arith::ConstantIndexOp::create(b, loc, rows));
      emb.getRowOffsetMutable().assign(offset);
    }
    r.dims.assign(ids.getRank(), Axes());
    r.dims.push_back(table.dims[1]);
    r.partial = table.dims[0];
    setResult(emb, r);
    return success();
  }

  LogicalResult partitionAttention(graph::AttentionOp attn, Layout r) {
    Axes heads = r.dims.back();
    r.partial.clear();
    Layout kv = Layout::replicated(2);
    kv.dims[1] = heads;
    if (failed(need(attn, 0, r)) || failed(need(attn, 1, kv)) ||
        failed(need(attn, 2, kv)))
      return failure();
    int64_t n = ranks(heads);
    if (attn.getNumHeads() % n || attn.getNumKvHeads() % n)
      return attn.emitOpError()
             << "dist-partition: " << attn.getNumHeads() << " heads and "
             << attn.getNumKvHeads() << " KV heads do not divide over " << n
             << " ranks";
    if (!firstAttention) {
      firstAttention = attn;
      kvSplit = n;
    } else if (kvSplit != n) {
      InFlightDiagnostic d = attn.emitOpError()
                             << "dist-partition: the KV heads split over " << n
                             << " ranks here and " << kvSplit
                             << " in an earlier layer (one cache)";
      d.attachNote(firstAttention->getLoc()) << "the earlier layer";
      return d;
    }
    attn.setNumHeads(attn.getNumHeads() / n);
    attn.setNumKvHeads(attn.getNumKvHeads() / n);
    setResult(attn, r);
    return success();
  }

  /// The cache argument holds the rank's KV heads.
  LogicalResult localCache() {
    if (kvSplit <= 1)
      return success();
    for (BlockArgument arg : func.getArguments()) {
      auto cache = dyn_cast<graph::KVCacheType>(arg.getType());
      if (!cache)
        continue;
      arg.setType(graph::KVCacheType::get(
          cache.getContext(), cache.getLayers(), cache.getMaxSeq(),
          cache.getKvHeads() / kvSplit, cache.getHeadDim(),
          cache.getElementType(), cache.getValuesByPosition(),
          cache.getKeysByDim(), cache.getValuesBlock()));
    }
    return success();
  }
};

struct DistPartitionPass
    : llmc::dist::impl::DistPartitionBase<DistPartitionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto meshes = llvm::to_vector(module.getOps<MeshOp>());
    if (meshes.empty())
      return;
    if (meshes.size() > 1) {
      meshes[1].emitError("dist-partition: a module partitions over one mesh");
      return signalPassFailure();
    }
    MeshOp mesh = meshes.front();
    if (auto plan = module->getAttrOfType<DictionaryAttr>("dist.plan"))
      if (auto pp = plan.getAs<ArrayAttr>("pp");
          pp && !pp.empty() && !module->hasAttr("dist.stage")) {
        mesh.emitError("dist-partition: the plan has pipeline stages (axes ")
            << pp << "); run dist-stage first (one program a stage)";
        return signalPassFailure();
      }
    auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(Partitioner(func, mesh, meshRef).run()))
        return signalPassFailure();
    }
  }
};

} // namespace
