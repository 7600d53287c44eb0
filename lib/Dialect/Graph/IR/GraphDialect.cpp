//===- GraphDialect.cpp - graph dialect registration and types ------------===//
#include "Dialect/Graph/IR/Graph.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace llmc::graph;

#include "Dialect/Graph/IR/GraphOpsDialect.cpp.inc"
#include "Dialect/Graph/IR/GraphEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/Graph/IR/GraphOpsTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/Graph/IR/GraphAttrs.cpp.inc"

void GraphDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Dialect/Graph/IR/GraphOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "Dialect/Graph/IR/GraphOpsTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Dialect/Graph/IR/GraphAttrs.cpp.inc"
      >();
}

LogicalResult
KVCacheType::verify(llvm::function_ref<InFlightDiagnostic()> emitError,
                    int64_t layers, int64_t maxSeq, int64_t kvHeads,
                    int64_t headDim, Type elementType, bool valuesByPosition,
                    bool keysByDim, int64_t valuesBlock) {
  if (layers <= 0 || maxSeq <= 0 || kvHeads <= 0 || headDim <= 0)
    return emitError() << "kv_cache sizes must be positive, got layers = "
                       << layers << ", max_seq = " << maxSeq
                       << ", kv_heads = " << kvHeads
                       << ", head_dim = " << headDim;
  if (!elementType.isF32() && !elementType.isF16())
    return emitError() << "kv_cache element type must be f32 or f16, got "
                       << elementType;
  // (llmc/abi.h's layouts: keys transposed only beside values by position.)
  if (keysByDim && !valuesByPosition)
    return emitError() << "kv_cache keys_by_dim needs values_by_position";
  if (valuesBlock < 0)
    return emitError() << "kv_cache values_block must be positive (or 0: no "
                          "blocks), got "
                       << valuesBlock;
  if (valuesBlock > 0 && (valuesByPosition || maxSeq % valuesBlock != 0))
    return emitError() << "kv_cache values_block = " << valuesBlock
                       << " needs transposed values and a max_seq (" << maxSeq
                       << ") it divides";
  return success();
}
