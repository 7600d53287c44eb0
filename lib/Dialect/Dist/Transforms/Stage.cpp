//===- Stage.cpp - one pipeline stage's program ---------------------------===//
//
// See the pass description (Passes.td). The residual chain gives the
// layers' boundaries: the embedding's rows x0, then for each layer an add
// after its attention (r = x + o) and one after its MLP (x' = r + d),
// possibly through the last rows of x (graph-output-rows). Stage s keeps
// what its layers' attention, its sends and the return need.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Dist/Transforms/Passes.h"
#include "Dialect/Graph/IR/Graph.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SetVector.h"

namespace llmc::dist {
#define GEN_PASS_DEF_DISTSTAGE
#include "Dialect/Dist/Transforms/Passes.h.inc"
} // namespace llmc::dist

using namespace mlir;
using namespace llmc;
using namespace llmc::dist;

namespace {

/// The add that continues the residual chain from `x`: a user add, or an
/// add of its last rows.
graph::AddOp nextResidual(Value x) {
  for (Operation *user : x.getUsers()) {
    if (auto add = dyn_cast<graph::AddOp>(user))
      return add;
    if (auto rows = dyn_cast<graph::LastRowsOp>(user))
      for (Operation *u : rows.getResult().getUsers())
        if (auto add = dyn_cast<graph::AddOp>(u))
          return add;
  }
  return {};
}

LogicalResult cut(func::FuncOp func, MeshOp mesh, DictionaryAttr plan,
                  int64_t stage) {
  auto ppAxes = plan.getAs<ArrayAttr>("pp");
  auto starts = plan.getAs<DenseI64ArrayAttr>("stages");
  MLIRContext *ctx = func.getContext();
  int64_t stages = starts ? starts.size() : 0;
  if (!ppAxes || ppAxes.empty() || stages <= 1)
    return success();
  if (stage < 0 || stage >= stages)
    return func.emitError() << "dist-stage: stage " << stage << " of a plan of "
                            << stages << " stages";
  SmallVector<graph::AttentionOp> attention;
  func.walk([&](graph::AttentionOp a) { attention.push_back(a); });
  int64_t layers = attention.size();
  SmallVector<graph::EmbeddingOp> embeddings;
  func.walk([&](graph::EmbeddingOp e) { embeddings.push_back(e); });
  if (embeddings.size() != 1)
    return func.emitError("dist-stage: expected one embedding lookup, found ")
           << embeddings.size();
  SmallVector<Value> chain = {embeddings.front().getResult()};
  while (graph::AddOp add = nextResidual(chain.back()))
    chain.push_back(add.getResult());
  if (static_cast<int64_t>(chain.size()) != 2 * layers + 1)
    return func.emitError("dist-stage: the decoder is not a chain of residual "
                          "layers (")
           << chain.size() - 1 << " residual adds for " << layers << " layers)";
  int64_t first = starts[stage];
  int64_t last = stage + 1 < stages ? starts[stage + 1] : layers;
  if (first < 0 || first >= last || last > layers)
    return func.emitError()
           << "dist-stage: stage " << stage << " starts at " << first
           << " and ends at " << last << " of " << layers << " layers";

  // The stage's position along the pp axes of a stage index.
  auto position = [&](int64_t s) {
    SmallVector<int64_t> pos(ppAxes.size());
    for (int64_t i = ppAxes.size() - 1; i >= 0; --i) {
      int64_t n = mesh.getAxisSize(cast<StringAttr>(ppAxes[i]).getValue());
      pos[i] = s % n;
      s /= n;
    }
    return pos;
  };
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  Block &body = func.getBody().front();
  OpBuilder b(ctx);
  Location loc = func.getLoc();
  b.setInsertionPointToStart(&body);
  Value ids = func.getArgument(0);
  Value tokens = tensor::DimOp::create(b, loc, ids, 0);
  // The rows of logits the caller asks for (graph-output-rows), else all.
  Value rows = tokens;
  for (BlockArgument arg : func.getArguments())
    if (func.getArgAttr(arg.getArgNumber(), "llmc.output_rows"))
      rows = arg;

  // The rows entering the stage, from the previous one.
  if (stage > 0) {
    Value in = chain[2 * first];
    b.setInsertionPointAfterValue(in);
    auto recv = RecvOp::create(b, in.getLoc(), in.getType(), meshRef, ppAxes,
                               b.getDenseI64ArrayAttr(position(stage - 1)),
                               ValueRange{tokens});
    in.replaceAllUsesExcept(recv.getResult(), recv);
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Operation *> roots = {ret};
  if (stage + 1 < stages) {
    // The rows leaving it, to the next; the logits from the last.
    Value out = chain[2 * last];
    b.setInsertionPointAfterValue(out);
    roots.push_back(
        SendOp::create(b, out.getLoc(), out, meshRef, ppAxes,
                       b.getDenseI64ArrayAttr(position(stage + 1))));
    b.setInsertionPoint(ret);
    Value logits = ret.getOperand(0);
    auto recv = RecvOp::create(
        b, logits.getLoc(), logits.getType(), meshRef, ppAxes,
        b.getDenseI64ArrayAttr(position(stages - 1)), ValueRange{rows});
    ret->setOperand(0, recv);
  } else {
    // The last stage's logits, to every other stage.
    b.setInsertionPoint(ret);
    for (int64_t s = 0; s + 1 < stages; ++s)
      roots.push_back(SendOp::create(b, loc, ret.getOperand(0), meshRef, ppAxes,
                                     b.getDenseI64ArrayAttr(position(s))));
  }
  for (graph::AttentionOp a : attention)
    if (int64_t layer = a.getLayer(); layer >= first && layer < last)
      roots.push_back(a);

  // Keep what the roots need; erase the rest (the other stages' layers,
  // including their attention and its cache writes).
  llvm::SetVector<Operation *> live;
  SmallVector<Operation *> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!live.insert(op))
      continue;
    op->walk([&](Operation *nested) {
      for (Value v : nested->getOperands())
        if (Operation *def = v.getDefiningOp(); def && def->getBlock() == &body)
          work.push_back(def);
    });
  }
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (!live.contains(&op)) {
      op.dropAllUses();
      op.erase();
    }

  // The stage's layers from 0; the cache holds them alone.
  for (graph::AttentionOp a : attention)
    if (live.contains(a))
      a.setLayer(a.getLayer() - first);
  for (BlockArgument arg : func.getArguments())
    if (auto cache = dyn_cast<graph::KVCacheType>(arg.getType()))
      arg.setType(graph::KVCacheType::get(
          ctx, last - first, cache.getMaxSeq(), cache.getKvHeads(),
          cache.getHeadDim(), cache.getElementType(),
          cache.getValuesByPosition(), cache.getKeysByDim(),
          cache.getValuesBlock()));
  func.setType(FunctionType::get(ctx, body.getArgumentTypes(),
                                 func.getFunctionType().getResults()));
  return success();
}

struct DistStagePass : llmc::dist::impl::DistStageBase<DistStagePass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto plan = module->getAttrOfType<DictionaryAttr>("dist.plan");
    auto meshes = llvm::to_vector(module.getOps<MeshOp>());
    if (!plan || meshes.size() != 1)
      return;
    auto func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func || func.isExternal()) {
      module.emitError("dist-stage: no @forward function");
      return signalPassFailure();
    }
    if (failed(cut(func, meshes.front(), plan, stage)))
      return signalPassFailure();
    if (auto pp = plan.getAs<ArrayAttr>("pp"); pp && !pp.empty())
      module->setAttr(
          "dist.stage",
          IntegerAttr::get(IntegerType::get(&getContext(), 64), stage));
  }
};

} // namespace
