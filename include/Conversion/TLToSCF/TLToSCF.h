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
/// tl.for -> scf.for (scf.parallel for parallel loops), tl.block -> its
/// body inlined (affine accesses expanded, the init under scf.if),
/// tl.prefetch -> memref.prefetch.
void populateTLToSCFPatterns(mlir::RewritePatternSet &patterns);

/// Replaces every `unrolled` loop under `root` by copies of its body.
mlir::LogicalResult unrollLoops(mlir::Operation *root);

/// Replaces every band of `vectorized` tl.for loops under `root` by vector
/// code (VectorizeBands.cpp); fails, with a located error, on a band it
/// cannot vectorize. With `baseAlignment` (a GPU kernel's buffers, which
/// start at multiples of it), each contiguous vector load states the
/// alignment its first element is known to have (a 16-byte load then
/// becomes one instruction).
mlir::LogicalResult vectorizeBands(mlir::Operation *root,
                                   mlir::RewriterBase &rewriter,
                                   int64_t baseAlignment = 0);
} // namespace llmc

#endif // LLMC_CONVERSION_TLTOSCF_TLTOSCF_H
