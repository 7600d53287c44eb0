//===- DistOps.cpp - dist dialect operations ------------------------------===//
#include "Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace llmc::dist;

#define GET_OP_CLASSES
#include "Dialect/Dist/IR/DistOps.cpp.inc"

//===----------------------------------------------------------------------===//
// dist.mesh
//===----------------------------------------------------------------------===//

LogicalResult MeshOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  if (shape.empty())
    return emitOpError("needs at least one axis");
  if (shape.size() != getAxes().size())
    return emitOpError() << "has " << shape.size() << " axis sizes but "
                         << getAxes().size() << " axis names";
  llvm::StringSet<> seen;
  for (auto [size, name] :
       llvm::zip(shape, getAxes().getAsValueRange<StringAttr>())) {
    if (size <= 0)
      return emitOpError() << "axis '" << name
                           << "' must have a positive number of ranks, got "
                           << size;
    if (name.empty())
      return emitOpError("axis names must not be empty");
    if (!seen.insert(name).second)
      return emitOpError() << "names axis '" << name << "' twice";
  }
  if (std::optional<ArrayAttr> links = getLinks();
      links && links->size() != shape.size())
    return emitOpError() << "has " << links->size() << " links for "
                         << shape.size() << " axes";
  return success();
}

int64_t MeshOp::getAxisIndex(StringRef name) {
  for (auto [i, axis] :
       llvm::enumerate(getAxes().getAsValueRange<StringAttr>()))
    if (axis == name)
      return i;
  return -1;
}

int64_t MeshOp::getAxisSize(StringRef name) {
  int64_t i = getAxisIndex(name);
  return i < 0 ? 1 : getShape()[i];
}

int64_t MeshOp::getGroupSize(ArrayAttr axes) {
  return getGroupSize(
      llvm::to_vector(axes.getAsValueRange<StringAttr>()));
}

int64_t MeshOp::getGroupSize(ArrayRef<StringRef> axes) {
  int64_t n = 1;
  for (StringRef axis : axes)
    n *= getAxisSize(axis);
  return n;
}

int64_t MeshOp::getNumRanks() {
  int64_t n = 1;
  for (int64_t s : getShape())
    n *= s;
  return n;
}

MeshOp llmc::dist::lookupMesh(Operation *from, FlatSymbolRefAttr mesh) {
  return SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, mesh);
}

/// The mesh `mesh` names from `op`, or an error at `op`.
static FailureOr<MeshOp> resolveMesh(Operation *op, FlatSymbolRefAttr mesh,
                                     SymbolTableCollection &symbols) {
  auto found = symbols.lookupNearestSymbolFrom<MeshOp>(op, mesh);
  if (!found) {
    op->emitOpError() << "refers to " << mesh << ", which is not a dist.mesh";
    return failure();
  }
  return found;
}

/// Checks that every name in `axes` is an axis of `mesh`, each at most once.
static LogicalResult verifyAxes(Operation *op, MeshOp mesh,
                                ArrayRef<StringRef> axes, StringRef what) {
  llvm::StringSet<> seen;
  for (StringRef axis : axes) {
    if (mesh.getAxisIndex(axis) < 0)
      return op->emitOpError()
             << what << " names axis '" << axis << "', which mesh @"
             << mesh.getSymName() << " does not have";
    if (!seen.insert(axis).second)
      return op->emitOpError()
             << what << " names axis '" << axis << "' more than once";
  }
  return success();
}

LogicalResult llmc::dist::verifySharding(Operation *op, ShardingAttr sharding,
                                         RankedTensorType type,
                                         SymbolTableCollection &symbols) {
  FailureOr<MeshOp> mesh = resolveMesh(op, sharding.getMesh(), symbols);
  if (failed(mesh))
    return failure();
  if (sharding.getDims().size() != static_cast<size_t>(type.getRank()))
    return op->emitOpError()
           << "sharding has " << sharding.getDims().size()
           << " dimensions for a tensor of rank " << type.getRank();
  for (int64_t d = 0, e = type.getRank(); d < e; ++d) {
    SmallVector<StringRef> axes = sharding.getDimAxes(d);
    if (failed(verifyAxes(op, *mesh, axes, "sharding")))
      return failure();
    int64_t ranks = 1;
    for (StringRef axis : axes)
      ranks *= mesh->getAxisSize(axis);
    if (!type.isDynamicDim(d) && type.getDimSize(d) % ranks != 0)
      return op->emitOpError()
             << "dimension " << d << " (" << type.getDimSize(d)
             << ") does not split evenly over the " << ranks
             << " ranks of its axes";
  }
  return verifyAxes(op, *mesh, sharding.getPartialAxes(), "sharding");
}

//===----------------------------------------------------------------------===//
// dist.shard
//===----------------------------------------------------------------------===//

LogicalResult ShardOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifySharding(*this, getSharding(),
                        cast<RankedTensorType>(getResult().getType()), symbols);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// The size of the collective's groups (the ranks along `axes` of `mesh`),
/// or an error at `op`.
static FailureOr<int64_t> groupSize(Operation *op, FlatSymbolRefAttr meshRef,
                                    ArrayAttr axes,
                                    SymbolTableCollection &symbols) {
  FailureOr<MeshOp> mesh = resolveMesh(op, meshRef, symbols);
  if (failed(mesh))
    return failure();
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis");
  SmallVector<StringRef> names =
      llvm::to_vector(axes.getAsValueRange<StringAttr>());
  if (failed(verifyAxes(op, *mesh, names, "the collective")))
    return failure();
  return mesh->getGroupSize(axes);
}

/// Checks `axis` against the tensor's rank.
static LogicalResult verifyAxis(Operation *op, StringRef name, int64_t axis,
                                RankedTensorType type) {
  if (axis < 0 || axis >= type.getRank())
    return op->emitOpError()
           << name << " " << axis << " is not a dimension of " << type;
  return success();
}

/// Checks that `result` is `input` with dimension `d` multiplied by `mul`
/// and divided by `div` (where static), the other dimensions and the element
/// type the same.
static LogicalResult
verifyScaledShape(Operation *op, RankedTensorType input,
                  RankedTensorType result,
                  ArrayRef<std::pair<int64_t, int64_t>> scales) {
  if (input.getElementType() != result.getElementType() ||
      input.getRank() != result.getRank())
    return op->emitOpError()
           << "result " << result << " must have the rank and element type of "
           << input;
  for (int64_t d = 0, e = input.getRank(); d < e; ++d) {
    if (input.isDynamicDim(d) || result.isDynamicDim(d))
      continue;
    int64_t size = input.getDimSize(d);
    for (auto [dim, factor] : scales) {
      if (dim != d)
        continue;
      if (factor < 0) {
        if (size % -factor != 0)
          return op->emitOpError()
                 << "dimension " << d << " (" << size
                 << ") does not split into " << -factor << " pieces";
        size /= -factor;
      } else {
        size *= factor;
      }
    }
    if (size != result.getDimSize(d))
      return op->emitOpError() << "result dimension " << d << " must be "
                               << size << ", got " << result.getDimSize(d);
  }
  return success();
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return groupSize(*this, getMeshAttr(), getAxes(), symbols);
}

/// Checks a collective that changes its input's shape along `axes` (named
/// `names`): each multiplied by the group's size (`grow`) or divided by it.
static LogicalResult
verifyReshapingCollective(Operation *op, FlatSymbolRefAttr mesh,
                          ArrayAttr meshAxes, Value input, Value result,
                          ArrayRef<std::tuple<StringRef, int64_t, bool>> axes,
                          SymbolTableCollection &symbols) {
  FailureOr<int64_t> n = groupSize(op, mesh, meshAxes, symbols);
  if (failed(n))
    return failure();
  auto in = cast<RankedTensorType>(input.getType());
  SmallVector<std::pair<int64_t, int64_t>> scales;
  for (auto [name, axis, grow] : axes) {
    if (failed(verifyAxis(op, name, axis, in)))
      return failure();
    scales.push_back({axis, grow ? *n : -*n});
  }
  return verifyScaledShape(op, in, cast<RankedTensorType>(result.getType()),
                           scales);
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyReshapingCollective(
      *this, getMeshAttr(), getAxes(), getInput(), getResult(),
      {{"gather_axis", getGatherAxis(), true}}, symbols);
}

LogicalResult
ReduceScatterOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyReshapingCollective(
      *this, getMeshAttr(), getAxes(), getInput(), getResult(),
      {{"scatter_axis", getScatterAxis(), false}}, symbols);
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyReshapingCollective(*this, getMeshAttr(), getAxes(), getInput(),
                                   getResult(),
                                   {{"split_axis", getSplitAxis(), false},
                                    {"concat_axis", getConcatAxis(), true}},
                                   symbols);
}

/// Checks a point-to-point peer: one position per axis, inside the axis.
static LogicalResult verifyPeer(Operation *op, FlatSymbolRefAttr meshRef,
                                ArrayAttr axes, ArrayRef<int64_t> peer,
                                SymbolTableCollection &symbols) {
  if (failed(groupSize(op, meshRef, axes, symbols)))
    return failure();
  MeshOp mesh = symbols.lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (peer.size() != axes.size())
    return op->emitOpError() << "peer has " << peer.size() << " positions for "
                             << axes.size() << " axes";
  for (auto [pos, axis] : llvm::zip(peer, axes.getAsValueRange<StringAttr>()))
    if (pos < 0 || pos >= mesh.getAxisSize(axis))
      return op->emitOpError()
             << "peer position " << pos << " is outside axis '" << axis
             << "' of " << mesh.getAxisSize(axis) << " ranks";
  return success();
}

LogicalResult SendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return verifyPeer(*this, getMeshAttr(), getAxes(), getPeer(), symbols);
}

LogicalResult RecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (getSizes().size() !=
      static_cast<size_t>(getResult().getType().getNumDynamicDims()))
    return emitOpError() << "needs a size for each of the result's "
                         << getResult().getType().getNumDynamicDims()
                         << " dynamic dimensions, got " << getSizes().size();
  return verifyPeer(*this, getMeshAttr(), getAxes(), getPeer(), symbols);
}

LogicalResult AxisIndexOp::verifySymbolUses(SymbolTableCollection &symbols) {
  return groupSize(*this, getMeshAttr(), getAxes(), symbols);
}

//===----------------------------------------------------------------------===//
// Buffer forms
//===----------------------------------------------------------------------===//

/// Checks that `type` is dense and row-major (what the runtime's
/// collectives read and write).
static LogicalResult verifyDense(Operation *op, StringRef name,
                                 MemRefType type) {
  if (!type.getLayout().isIdentity())
    return op->emitOpError()
           << name << " must be a dense row-major buffer, got " << type;
  return success();
}

LogicalResult
BufferAllReduceOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(verifyDense(*this, "buffer", getBuffer().getType())))
    return failure();
  return groupSize(*this, getMeshAttr(), getAxes(), symbols);
}

LogicalResult
BufferAllGatherOp::verifySymbolUses(SymbolTableCollection &symbols) {
  MemRefType in = getInput().getType(), out = getOutput().getType();
  if (failed(verifyDense(*this, "input", in)) ||
      failed(verifyDense(*this, "output", out)))
    return failure();
  FailureOr<int64_t> n = groupSize(*this, getMeshAttr(), getAxes(), symbols);
  if (failed(n))
    return failure();
  auto tensor = [](MemRefType t) {
    return RankedTensorType::get(t.getShape(), t.getElementType());
  };
  if (failed(verifyAxis(*this, "gather_axis", getGatherAxis(), tensor(in))))
    return failure();
  return verifyScaledShape(*this, tensor(in), tensor(out),
                           {{getGatherAxis(), *n}});
}

LogicalResult BufferSendOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(verifyDense(*this, "buffer", getBuffer().getType())))
    return failure();
  return verifyPeer(*this, getMeshAttr(), getAxes(), getPeer(), symbols);
}

LogicalResult BufferRecvOp::verifySymbolUses(SymbolTableCollection &symbols) {
  if (failed(verifyDense(*this, "buffer", getBuffer().getType())))
    return failure();
  return verifyPeer(*this, getMeshAttr(), getAxes(), getPeer(), symbols);
}
