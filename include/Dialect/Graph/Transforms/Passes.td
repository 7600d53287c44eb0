//===- Passes.td - graph dialect passes --------------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_TD
#define LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GraphLayoutWeights : Pass<"graph-layout-weights", "mlir::ModuleOp"> {
  let summary = "Assign every parameter a byte offset in the weight blob";
  let description = [{
    Gives each distinct parameter name a `blob_offset`: parameters are laid
    out in order of first use, each aligned to `alignment` bytes, in its
    element type (f32, f16, bf16, or ggml blocks).
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

def GraphActQuant : Pass<"graph-act-quant", "mlir::ModuleOp"> {
  let summary = "Choose the numerics of llama.cpp or of exact f32 math";
  let description = [{
    llama.cpp's CPU matmuls first convert the f32 activations to the
    weight's "vec_dot_type" and then take the dot product in that form. With
    `mode=llama.cpp` this pass records the same choice on every
    `graph.matmul` as its `act_type`, so that lowering reproduces llama.cpp's
    numbers (and its int8 dot products):

    | weight (as stored in the model file) | act_type        |
    |--------------------------------------|-----------------|
    | F32                                  | none (exact)    |
    | F16                                  | f16             |
    | BF16                                 | bf16            |
    | Q8_0, Q4_0                           | `!graph.q8_0`   |
    | Q4_K, Q6_K                           | `!graph.q8_k`   |

    The stored type is the weight's element type; for an f32 parameter
    whose file data is 16-bit (a vector the artifact writer widens) it is
    read from the `graph.param` source (`#graph.extern`). It also gives
    `graph.rope` llama.cpp's `iterated` angles and `graph.attention`
    ggml's soft_max sums (`softmax_block = 16`) over a KV view padded like
    llama.cpp's (`kv_pad = 64`). These are numeric choices of
    the model, the same on every target: where the sums are ordered as
    llama.cpp orders them is up to the schedules. `mode=exact` (the
    default) removes them.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"exact\"",
           "exact (f32 activations) or llama.cpp">
  ];
}

#endif // LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_TD
