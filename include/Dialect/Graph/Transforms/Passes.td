//===- Passes.td - graph dialect passes --------------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_TD
#define LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GraphLayoutWeights : Pass<"graph-layout-weights", "mlir::ModuleOp"> {
  let summary = "Assign every parameter a byte offset in the weight blob";
  let description = [{
    Gives each distinct parameter name a `blob_offset`: parameters are laid
    out in order of first use, each aligned to `alignment` bytes, as f32.
    Params that share a name (a tied classifier and the embedding table)
    share one copy. The total size is recorded as the module attribute
    `graph.weights_bytes`. The artifact writer copies (and converts) the data
    to these offsets; lowering turns each param into a view at its offset.

    Input: params with static shapes, possibly without offsets.
    Output: every `graph.param` has a `blob_offset`.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "byte alignment of every parameter in the blob">
  ];
}

#endif // LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_TD
