//===- GraphTypes.td - graph dialect types and attributes --*- tablegen -*-===//
#ifndef LLMC_DIALECT_GRAPH_GRAPHTYPES_TD
#define LLMC_DIALECT_GRAPH_GRAPHTYPES_TD

include "Dialect/Graph/IR/GraphDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Graph_WeightsType : TypeDef<Graph_Dialect, "Weights"> {
  let mnemonic = "weights";
  let summary = "the model's parameter blob";
  let description = [{
    An opaque handle to all parameters of a model. `graph.param` selects one
    named tensor from it. After `graph-layout-weights` every parameter has a
    byte offset in the blob; lowering turns the handle into a byte buffer.

    ```mlir
    func.func @f(%w: !graph.weights) -> tensor<4x4xf32> {
      %0 = graph.param %w["layers.0.wq"] : tensor<4x4xf32>
      return %0 : tensor<4x4xf32>
    }
    ```
  }];
}

def Graph_KVCacheType : TypeDef<Graph_Dialect, "KVCache"> {
  let mnemonic = "kv_cache";
  let summary = "keys and values of every layer for every position";
  let description = [{
    The attention state of a model: for each of `layers` layers, keys and
    values of `max_seq` positions, `kv_heads` heads of `head_dim` elements.
    Values of this type are stateful handles: `graph.attention` writes the
    current tokens' keys and values into it and reads the earlier ones.

    Per layer and KV head, the keys are stored as [position][head_dim]; the
    values transposed, [head_dim][position] (default: p·V then reads rows of
    positions, the sums llama.cpp's order runs in), or with
    `values_by_position = true` as the keys are, [position][head_dim]
    (`graph-kv-layout`: a step's values one contiguous row, p·V's positions
    an outer loop around lanes of the head dim). With `keys_by_dim = true`
    (only with `values_by_position`) the keys are transposed,
    [head_dim][position]: q·k's positions in lanes, each element of the
    head dim a row of the context, no horizontal sum per position.

    With `values_block = B` (B > 0, values transposed, `max_seq` a multiple
    of B) the transposed values are stored in blocks of B positions,
    [position / B][head_dim][B]: value (position t, element d) at
    `(t floordiv B) * B * head_dim + d * B + t mod B`. p·V's lanes of B
    positions read one contiguous run of the context for all of the head's
    elements (`graph-kv-layout`: a step's `head_dim` stores fall in
    consecutive lines, not `max_seq` positions apart); the sums are the
    same, in the same order.

    ```mlir
    !graph.kv_cache<layers = 2, max_seq = 128, kv_heads = 2, head_dim = 16, element_type = f32>
    ```
  }];
  let parameters = (ins "int64_t":$layers, "int64_t":$max_seq,
                        "int64_t":$kv_heads, "int64_t":$head_dim,
                        "::mlir::Type":$element_type,
                        DefaultValuedParameter<"bool", "false">:$values_by_position,
                        DefaultValuedParameter<"bool", "false">:$keys_by_dim,
                        DefaultValuedParameter<"int64_t", "0">:$values_block);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Graph_Q8_0Type : TypeDef<Graph_Dialect, "Q8_0"> {
  let mnemonic = "q8_0";
  let summary = "ggml's Q8_0 quantized element";
  let description = [{
    The element type of weights stored as llama.cpp's Q8_0 blocks: each run
    of 32 consecutive elements of a row is one 34-byte block, an f16 scale
    `d` followed by 32 int8 values `q`; element i is `d * q[i]`. Rows must be
    a multiple of 32 long. Tensors of this type stay quantized in memory;
    `graph.matmul` dequantizes inside its loop nest.

    ```mlir
    %w = graph.param %weights["w"] : tensor<64x256x!graph.q8_0>
    ```
  }];
}

def Graph_Q4_0Type : TypeDef<Graph_Dialect, "Q4_0"> {
  let mnemonic = "q4_0";
  let summary = "ggml's Q4_0 quantized element";
  let description = [{
    llama.cpp's Q4_0 blocks: 32 elements in 18 bytes, an f16 scale `d` and
    16 bytes of 4-bit values; byte j holds element j in its low nibble and
    element j + 16 in its high nibble; element i is `d * (nibble - 8)`.
    Stays quantized in memory like `!graph.q8_0`.

    ```mlir
    %w = graph.param %weights["w"] : tensor<64x256x!graph.q4_0>
    ```
  }];
}

def Graph_Q6_KType : TypeDef<Graph_Dialect, "Q6_K"> {
  let mnemonic = "q6_k";
  let summary = "ggml's Q6_K quantized element";
  let description = [{
    llama.cpp's Q6_K super-blocks: 256 elements in 210 bytes: `ql[128]`
    (low 4 bits), `qh[64]` (high 2 bits), 16 int8 sub-block scales and an
    f16 scale `d`; element value `d * scale * (q - 32)` (ggml's
    dequantize_row_q6_K). Rows must be a multiple of 256 long.

    ```mlir
    %w = graph.param %weights["w"] : tensor<64x256x!graph.q6_k>
    ```
  }];
}

def Graph_Q4_KType : TypeDef<Graph_Dialect, "Q4_K"> {
  let mnemonic = "q4_k";
  let summary = "ggml's Q4_K quantized element";
  let description = [{
    llama.cpp's Q4_K super-blocks: 256 elements in 144 bytes: f16 `d` and
    `dmin`, 12 bytes of packed 6-bit sub-block scales and mins, and 128
    bytes of 4-bit values; element value `d*sc * q - dmin*m` for its 32-wide
    sub-block (ggml's dequantize_row_q4_K). Rows must be a multiple of 256.

    ```mlir
    %w = graph.param %weights["w"] : tensor<64x256x!graph.q4_k>
    ```
  }];
}

def Graph_Q8_KType : TypeDef<Graph_Dialect, "Q8_K"> {
  let mnemonic = "q8_k";
  let summary = "ggml's Q8_K activation quantization";
  let description = [{
    The 8-bit super-blocks llama.cpp quantizes activations to before a dot
    product with K-quant weights (`!graph.q4_k`, `!graph.q6_k`): 256 elements
    with an f32 scale `d` (from the element of largest magnitude, as
    `-max / 127`), 256 int8 values and 16 int16 sums of 16 values each.
    Only used as a matmul's `act_type`, never as a weight.
  }];
}

def Graph_AnyKVCache : Type<CPred<"::llvm::isa<::llmc::graph::KVCacheType>($_self)">,
                            "KV cache", "::llmc::graph::KVCacheType">;
def Graph_AnyWeights : Type<CPred<"::llvm::isa<::llmc::graph::WeightsType>($_self)">,
                            "weights", "::llmc::graph::WeightsType">;

//===----------------------------------------------------------------------===//
// Enums and attributes
//===----------------------------------------------------------------------===//

def Graph_RopeStyle : I32EnumAttr<"RopeStyle", "how RoPE pairs elements", [
    I32EnumAttrCase<"interleaved", 0>,  // (x[2i], x[2i+1]): llama2.c, GGUF llama
    I32EnumAttrCase<"half", 1>          // (x[i], x[i+d/2]): Hugging Face, Qwen
  ]> {
  let cppNamespace = "::llmc::graph";
  let genSpecializedAttr = 0;
}
def Graph_RopeStyleAttr : EnumAttr<Graph_Dialect, Graph_RopeStyle, "rope_style"> {
  let assemblyFormat = "`<` $value `>`";
}

def Graph_RopeAngles : I32EnumAttr<"RopeAngles", "how RoPE computes its angles", [
    I32EnumAttrCase<"direct", 0>,   // pos * theta^(-2i/d) per pair: PyTorch
    I32EnumAttrCase<"iterated", 1>  // theta^(-2/d) multiplied up: llama.cpp
  ]> {
  let cppNamespace = "::llmc::graph";
  let genSpecializedAttr = 0;
}
def Graph_RopeAnglesAttr : EnumAttr<Graph_Dialect, Graph_RopeAngles, "rope_angles"> {
  let assemblyFormat = "`<` $value `>`";
}

def Graph_ExternalTensorAttr : AttrDef<Graph_Dialect, "ExternalTensor"> {
  let mnemonic = "extern";
  let summary = "where a parameter's data lives in the model file";
  let description = [{
    The file, byte offset and stored element type of a parameter, recorded by
    the importer so that the artifact writer can read (and convert) the data
    without the IR ever holding it.

    ```mlir
    #graph.extern<file = "model.safetensors", offset = 128, dtype = bf16>
    ```
  }];
  let parameters = (ins StringRefParameter<>:$file, "uint64_t":$offset,
                        "::mlir::Type":$dtype);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Graph_InterleavedAttr : AttrDef<Graph_Dialect, "Interleaved"> {
  let mnemonic = "interleaved";
  let summary = "a weight matrix's rows interleaved for products in lanes";
  let description = [{
    The encoding of a quantized weight `tensor<N x K x !graph.q4_0>` (or
    Q8_0, Q4_K, Q6_K) whose
    blocks are stored interleaved, `rows` rows at a time, so that a vector
    lane per row reads its bytes with one load (ggml's repacked
    `block_q4_0x8`, generalised to any row count). `graph-interleave-weights`
    chooses it from the target; the artifact writer lays the bytes out; the
    matmul lowering reads them.

    Rows come in groups of `rows`; a group holds, block column by block
    column, its `rows` blocks of that column (`rows` x the block's bytes):
    first their header (Q8_0, Q4_0: the f16 scale; Q4_K: d, dmin and the
    12 bytes of sub-block scales; Q6_K: the 16 sub-block scales and d, the
    last 18 bytes of its block) byte plane by byte plane (header byte `h`
    of the group's row `r` at `h * rows + r`), then their quant bytes (the
    block's other bytes, in order) `chunk` at a time, row after row (quant
    byte `j` of row `r` at `header * rows + (j / chunk * rows + r) * chunk
    + j % chunk`). The size is the plain layout's.

    A float matrix (f32, f16, bf16) is interleaved element by element: its
    block is one element, without header, and `chunk` is the element's
    bytes, so element `k` of row `n` lies at `((n / rows) * K + k) * rows +
    n % rows` (elements): a group's rows side by side, `rows` outputs per
    vector (the exact mode's products, `graph-interleave-weights` with
    `floats`).

    ```mlir
    tensor<768x768x!graph.q4_0, #graph.interleaved<rows = 16, chunk = 4>>
    tensor<768x768xf32, #graph.interleaved<rows = 16, chunk = 4>>
    ```
  }];
  let parameters = (ins "int64_t":$rows, "int64_t":$chunk);
  let assemblyFormat = "`<` struct(params) `>`";
}

#endif // LLMC_DIALECT_GRAPH_GRAPHTYPES_TD
