//===- TL.h - the tensor-loop dialect: dialect, attributes, ops -----------===//
#ifndef LLMC_DIALECT_TL_IR_TL_H
#define LLMC_DIALECT_TL_IR_TL_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Dialect/TL/IR/TLOpsDialect.h.inc"
#include "Dialect/TL/IR/TLEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/TL/IR/TLAttrs.h.inc"

#define GET_OP_CLASSES
#include "Dialect/TL/IR/TLOps.h.inc"

namespace llmc::tl {
/// An access of a tl.block body (an affine load/store map and its operands,
/// which must be arguments of the body `block`) as a map over all of the
/// block's iteration variables; failure when an operand is something else.
mlir::FailureOr<mlir::AffineMap> accessOverIters(mlir::AffineMap map,
                                                 mlir::ValueRange operands,
                                                 mlir::Block *block);

/// The extent a GPU thread axis takes for `loop` (from 0 with step 1): its
/// constant bound, or C of a bound min(C, x) (a split's last, partial
/// tile); none otherwise.
std::optional<int64_t> threadAxisExtent(ForOp loop);
} // namespace llmc::tl

#endif // LLMC_DIALECT_TL_IR_TL_H
