//===- Graph.h - the graph dialect: dialect, types, attributes, ops -------===//
#ifndef LLMC_DIALECT_GRAPH_IR_GRAPH_H
#define LLMC_DIALECT_GRAPH_IR_GRAPH_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Dialect/Graph/IR/GraphOpsDialect.h.inc"
#include "Dialect/Graph/IR/GraphEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/Graph/IR/GraphOpsTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/Graph/IR/GraphAttrs.h.inc"

#define GET_OP_CLASSES
#include "Dialect/Graph/IR/GraphOps.h.inc"

namespace llmc::graph {
/// Bytes a tensor of this type occupies in the weight blob (f32 elements, or
/// whole quantized blocks).
int64_t storageBytes(mlir::RankedTensorType type);
/// Bytes per block of a quantized element type, or 0 for others.
int64_t quantBlockBytes(mlir::Type elementType);
/// Elements per block of a quantized element type (32, or 256 for K-quants).
int64_t quantBlockElements(mlir::Type elementType);
/// Bytes of a quantized block's header, its scales (the f16 scale of Q8_0
/// and Q4_0; Q4_K's d, dmin and sub-block scales; Q6_K's 16 sub-block
/// scales and d), for the formats a weight may be interleaved in; 0 for the
/// others. The header is one run of bytes, at quantHeaderStart.
int64_t quantHeaderBytes(mlir::Type elementType);
/// Where the header starts in the block: 0 (before the quants), or after
/// them (Q6_K: 192).
int64_t quantHeaderStart(mlir::Type elementType);
/// Whether `op` is an elementwise op graph.elementwise may hold (graph.silu,
/// graph.add, graph.mul): the verifier's list and graph-fuse-elementwise's.
bool isFusableElementwise(mlir::Operation *op);
/// Whether a matrix of `elementType` may be interleaved element by element
/// (f32, f16, bf16: #graph.interleaved with a chunk of one element).
bool isInterleavableFloat(mlir::Type elementType);
/// The interleaving of a weight type (#graph.interleaved), or null.
InterleavedAttr getInterleaving(mlir::RankedTensorType type);
/// Where byte `byte` of block `block` of row `row` of an interleaved matrix
/// of `element` blocks, `blocksPerRow` per row, lies, from the matrix's first
/// byte (#graph.interleaved's layout).
int64_t interleavedOffset(InterleavedAttr layout, mlir::Type element,
                          int64_t blocksPerRow, int64_t row, int64_t block,
                          int64_t byte);
} // namespace llmc::graph

#endif // LLMC_DIALECT_GRAPH_IR_GRAPH_H
