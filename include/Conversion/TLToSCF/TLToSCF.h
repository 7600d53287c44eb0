//===- TLToSCF.h - lowering tl to scf ---------------------------*- C++ -*-===//
#ifndef LLMC_CONVERSION_TLTOSCF_TLTOSCF_H
#define LLMC_CONVERSION_TLTOSCF_TLTOSCF_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "Dialect/TL/IR/TL.h"

namespace llmc {
#define GEN_PASS_DECL_CONVERTTLTOSCF
#include "Conversion/Passes.h.inc"

/// Patterns lowering tl.for to scf.for and inlining tl.block.
void populateTLToSCFPatterns(mlir::RewritePatternSet &patterns);

/// Replaces every band of `vectorized` tl.for loops under `root` by vector
/// code (VectorizeBands.cpp); fails, with a located error, on a band it
/// cannot vectorize.
mlir::LogicalResult vectorizeBands(mlir::Operation *root,
                                   mlir::RewriterBase &rewriter);
} // namespace llmc

#endif // LLMC_CONVERSION_TLTOSCF_TLTOSCF_H
