//===- FuseElementwise.cpp - chains of elementwise ops in one loop --------===//
//
// Producer-consumer fusion on the graph: a cluster grows from its root (the
// last op of a chain) backwards through operands produced by elementwise ops
// of the root's result type whose only use is in the cluster, then becomes
// one graph.elementwise holding the ops.
//
//===----------------------------------------------------------------------===//
#include "Dialect/Graph/IR/Graph.h"
#include "Dialect/Graph/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace llmc::graph {
#define GEN_PASS_DEF_GRAPHFUSEELEMENTWISE
#include "Dialect/Graph/Transforms/Passes.h.inc"
} // namespace llmc::graph

using namespace mlir;
using namespace llmc::graph;

namespace {

/// The ops of the chain that ends at `root`, in program order.
SmallVector<Operation *> clusterOf(Operation *root) {
  SmallVector<Operation *> cluster = {root}, worklist = {root};
  Type type = root->getResult(0).getType();
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (!producer || !isFusableElementwise(producer) ||
          producer->getBlock() != root->getBlock() ||
          producer->getResult(0).getType() != type ||
          !producer->getResult(0).hasOneUse() ||
          llvm::is_contained(cluster, producer))
        continue;
      cluster.push_back(producer);
      worklist.push_back(producer);
    }
  }
  llvm::sort(cluster,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return cluster;
}

/// Replaces the cluster by one graph.elementwise at its root.
void fuse(ArrayRef<Operation *> cluster) {
  Operation *root = cluster.back();
  SmallVector<Value> inputs;
  for (Operation *op : cluster)
    for (Value operand : op->getOperands())
      if (!llvm::is_contained(cluster, operand.getDefiningOp()) &&
          !llvm::is_contained(inputs, operand))
        inputs.push_back(operand);
  OpBuilder b(root);
  auto fused = ElementwiseOp::create(b, root->getLoc(),
                                     root->getResult(0).getType(), inputs);
  Block *body = b.createBlock(&fused.getBody());
  IRMapping map;
  for (Value input : inputs)
    map.map(input, body->addArgument(input.getType(), input.getLoc()));
  for (Operation *op : cluster)
    b.clone(*op, map);
  YieldOp::create(b, root->getLoc(), map.lookup(root->getResult(0)));
  root->getResult(0).replaceAllUsesWith(fused.getResult());
  for (Operation *op : llvm::reverse(cluster))
    op->erase();
}

struct GraphFuseElementwisePass
    : llmc::graph::impl::GraphFuseElementwiseBase<GraphFuseElementwisePass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      // Roots first (the last op of each chain), so that a cluster is whole
      // when it is built.
      SmallVector<Operation *> ops;
      func.walk([&](Operation *op) {
        if (isFusableElementwise(op) && !op->getParentOfType<ElementwiseOp>())
          ops.push_back(op);
      });
      DenseSet<Operation *> fused;
      for (Operation *op : llvm::reverse(ops)) {
        if (fused.contains(op))
          continue;
        SmallVector<Operation *> cluster = clusterOf(op);
        if (cluster.size() < 2)
          continue;
        fused.insert(cluster.begin(), cluster.end());
        fuse(cluster);
      }
    }
  }
};

} // namespace
