//===- TLToSCF.h - lowering tl to scf ---------------------------*- C++ -*-===//
#ifndef LLMC_CONVERSION_TLTOSCF_TLTOSCF_H
#define LLMC_CONVERSION_TLTOSCF_TLTOSCF_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "Dialect/TL/IR/TL.h"

namespace llmc {
#define GEN_PASS_DECL_CONVERTTLTOSCF
#include "Conversion/Passes.h.inc"

/// Patterns lowering tl.for to scf.for and inlining tl.block.
void populateTLToSCFPatterns(mlir::RewritePatternSet &patterns);
} // namespace llmc

#endif // LLMC_CONVERSION_TLTOSCF_TLTOSCF_H
