//===- GraphToTL.h - lowering graph to tl -----------------------*- C++ -*-===//
#ifndef LLMC_CONVERSION_GRAPHTOTL_GRAPHTOTL_H
#define LLMC_CONVERSION_GRAPHTOTL_GRAPHTOTL_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"
#include "Dialect/TL/IR/TL.h"

namespace llmc {
#define GEN_PASS_DECL_CONVERTGRAPHTOTL
#include "Conversion/Passes.h.inc"

/// Converts graph tensor types to buffers: ranked tensors to memrefs of the
/// same shape, `!graph.weights` to `memref<?xi8>` and `!graph.kv_cache` to a
/// rank-5 f32 memref [layers, 2, max_seq, kv_heads, head_dim].
void populateGraphToTLTypeConversions(mlir::TypeConverter &converter);

/// Patterns lowering every graph op to tl loop nests.
void populateGraphToTLPatterns(const mlir::TypeConverter &converter,
                               mlir::RewritePatternSet &patterns);
} // namespace llmc

#endif // LLMC_CONVERSION_GRAPHTOTL_GRAPHTOTL_H
