//===- Dist.h - the dist dialect: dialect, attributes, ops ------*- C++ -*-===//
#ifndef LLMC_DIALECT_DIST_IR_DIST_H
#define LLMC_DIALECT_DIST_IR_DIST_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Dialect/Dist/IR/DistEnums.h.inc"
#include "Dialect/Dist/IR/DistOpsDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/Dist/IR/DistAttrs.h.inc"

#define GET_OP_CLASSES
#include "Dialect/Dist/IR/DistOps.h.inc"

namespace llmc::dist {
/// The `dist.mesh` that `mesh` names from `from`, or null.
MeshOp lookupMesh(mlir::Operation *from, mlir::FlatSymbolRefAttr mesh);

/// Checks `sharding` against `type` and its mesh (which must resolve from
/// `op`): one axis list per dimension, axes of the mesh, each at most once,
/// a split static dimension divisible by its axes' ranks. Errors are
/// emitted at `op`.
mlir::LogicalResult verifySharding(mlir::Operation *op, ShardingAttr sharding,
                                   mlir::RankedTensorType type,
                                   mlir::SymbolTableCollection &symbols);
} // namespace llmc::dist

#endif // LLMC_DIALECT_DIST_IR_DIST_H
