//===- TLDialect.cpp - tensor-loop dialect registration -------------------===//
#include "Dialect/TL/IR/TL.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace llmc::tl;

#include "Dialect/TL/IR/TLOpsDialect.cpp.inc"
#include "Dialect/TL/IR/TLEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/TL/IR/TLAttrs.cpp.inc"

void TLDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Dialect/TL/IR/TLOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Dialect/TL/IR/TLAttrs.cpp.inc"
      >();
}
