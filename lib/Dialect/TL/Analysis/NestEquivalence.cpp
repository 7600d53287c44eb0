//===- NestEquivalence.cpp - are two loop nests the same code? ------------===//
#include "Dialect/TL/Analysis/NestEquivalence.h"
#include "Dialect/TL/IR/TL.h"

using namespace mlir;
using namespace llmc;
using namespace llmc::tl;

SmallVector<NamedAttribute> llmc::tl::meaningfulAttrs(Operation *op) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute a : op->getAttrDictionary()) {
    if (auto block = dyn_cast<BlockOp>(op);
        block && a.getName() == block.getNameAttrName())
      continue;
    attrs.push_back(a);
  }
  return attrs;
}

llvm::hash_code NestEquivalence::hash(Operation *root) {
  llvm::hash_code h = llvm::hash_value(root->getNumRegions());
  root->walk([&](Operation *op) {
    h = llvm::hash_combine(h, op->getName().getStringRef(),
                           op->getNumOperands(), op->getNumRegions());
    for (Type t : op->getResultTypes())
      h = llvm::hash_combine(h, t);
  });
  return h;
}

bool NestEquivalence::pair(Value x, Value y) {
  if (Value known = map.lookupOrNull(x))
    return known == y;
  if (!rule || targets.contains(y) || x.getType() != y.getType() ||
      !rule(x, y))
    return false;
  map.map(x, y);
  targets.insert(y);
  return true;
}

bool NestEquivalence::equal(Region &a, Region &b) {
  if (a.getBlocks().size() != b.getBlocks().size())
    return false;
  for (auto [ba, bb] : llvm::zip(a, b)) {
    if (ba.getNumArguments() != bb.getNumArguments() ||
        ba.getOperations().size() != bb.getOperations().size())
      return false;
    for (auto [x, y] : llvm::zip(ba.getArguments(), bb.getArguments())) {
      if (x.getType() != y.getType())
        return false;
      map.map(x, y);
      targets.insert(y);
    }
    for (auto [oa, ob] : llvm::zip(ba, bb))
      if (!equal(&oa, &ob))
        return false;
  }
  return true;
}

bool NestEquivalence::equal(Operation *a, Operation *b) {
  if (a->getName() != b->getName() ||
      a->getNumOperands() != b->getNumOperands() ||
      a->getNumResults() != b->getNumResults() ||
      a->getNumRegions() != b->getNumRegions() ||
      a->getResultTypes() != b->getResultTypes())
    return false;
  for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands()))
    if (!pair(x, y))
      return false;
  if (meaningfulAttrs(a) != meaningfulAttrs(b))
    return false;
  for (auto [ra, rb] : llvm::zip(a->getRegions(), b->getRegions()))
    if (!equal(ra, rb))
      return false;
  for (auto [x, y] : llvm::zip(a->getResults(), b->getResults())) {
    map.map(x, y);
    targets.insert(y);
  }
  return true;
}
