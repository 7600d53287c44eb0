//===- Passes.td - dist dialect passes ---------------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_DIST_TRANSFORMS_PASSES_TD
#define LLMC_DIALECT_DIST_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistPropagate : Pass<"dist-propagate", "mlir::ModuleOp"> {
  let summary = "Give every graph value a sharding, from a few annotations";
  let description = [{
    Starts from the shardings a function pins (`dist.shard`, arguments'
    `dist.sharding` attributes; all on one mesh) and walks the graph in
    order, giving each graph op's result the sharding its rule derives from
    its operands' (a value without one is replicated), recorded as the op's
    `dist.sharding` attribute where it is not replicated. A weight a product
    reads (a `graph.param`) without a sharding of its own takes the one the
    product's input implies, recorded on the param: annotating Q, K, V, gate
    and up by their output columns gives the whole Megatron layer (O and
    down split by their rows). The rules:

    - `graph.matmul` (x[.., K] times w[N, K]): the result's rows are x's,
      its columns w's rows' axes; where x's K is split and w is not
      sharded, w takes the same split of its K; w's K split makes the
      result a partial sum over those axes.
    - `graph.embedding`: the result's columns are the table's; a table
      split by rows (vocabulary-parallel) gives a partial sum.
    - `graph.rms_norm`: rows as the input's, the normalised dimension
      whole (the sum of squares needs it).
    - `graph.rope`: as its input where a split keeps whole heads.
    - `graph.attention`: Q's split of heads where Q, K and V split alike
      and the heads and KV heads divide evenly (each rank holds its KV
      heads of the cache).
    - `graph.add`: operands aligned from the right; a dimension split in
      either is split in the result; partial where both are partial over
      the same axes. `graph.mul`, `graph.silu`, `graph.elementwise` alike,
      never partial (not linear in a sum).
    - `graph.reshape`: the rows kept; a split of the last dimension goes to
      the first trailing dimension of the other shape where it divides.
    - `graph.last_rows`: the input's columns, rows whole.

    A partial operand of an op that cannot take one, or an operand laid
    out otherwise than its op needs, is resolved by partitioning (a
    collective); propagation only records the layouts.
  }];
  let dependentDialects = ["::llmc::dist::DistDialect"];
}

#endif // LLMC_DIALECT_DIST_TRANSFORMS_PASSES_TD
