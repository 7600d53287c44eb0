//===- GraphOps.td - graph dialect operations --------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_GRAPH_GRAPHOPS_TD
#define LLMC_DIALECT_GRAPH_GRAPHOPS_TD

include "Dialect/Graph/IR/GraphDialect.td"
include "Dialect/Graph/IR/GraphTypes.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Graph_F32Tensor : RankedTensorOf<[F32]>;
def Graph_WeightTensor : RankedTensorOf<[F32, F16, BF16, Graph_Q8_0Type, Graph_Q4_0Type, Graph_Q6_KType, Graph_Q4_KType]>;

def Graph_ParamOp : Graph_Op<"param", [Pure]> {
  let summary = "a named external parameter";
  let description = [{
    Selects the tensor called `name` from the weight blob. The result must
    have a static shape. `source` (set by importers) says where the data lives
    in the model file; `blob_offset` (set by `graph-layout-weights`) is its
    byte offset in the compiled artifact's weight blob. Two params with the
    same name denote the same tensor.

    ```mlir
    %wq = graph.param %w["layers.0.attention.wq.weight"]
        {source = #graph.extern<file = "m.bin", offset = 28, dtype = f32>}
        : tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Graph_WeightsType:$weights, StrAttr:$name,
                       OptionalAttr<Graph_ExternalTensorAttr>:$source,
                       OptionalAttr<I64Attr>:$blob_offset);
  let results = (outs Graph_WeightTensor:$result);
  let assemblyFormat = "$weights `[` $name `]` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Graph_EmbeddingOp : Graph_Op<"embedding", [Pure]> {
  let summary = "row gather from an embedding table";
  let description = [{
    `result[i, :] = table[ids[i], :]`. Ids outside `[0, vocab)` are undefined
    behaviour at run time (the runtime checks them before the call). A
    quantized table is dequantized row by row as it is gathered.

    With `offset(%o)` the table holds rows `o .. o + rows - 1` of a larger
    one (a rank's part of a vocabulary-parallel table, `dist-partition`):
    `result[i, :] = table[ids[i] - o, :]` where that row is in the table,
    zeros where it is not, so that the ranks' results sum to the whole
    lookup.

    ```mlir
    %x = graph.embedding %table[%ids] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %p = graph.embedding %part[%ids] offset(%o) : tensor<256x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Graph_WeightTensor:$table, RankedTensorOf<[I32]>:$ids,
                       Optional<Index>:$row_offset);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` (`offset` `(` $row_offset^ `)`)? attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Graph_RMSNormOp : Graph_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "root-mean-square normalisation over the last dimension";
  let description = [{
    `result = x / sqrt(mean(x^2, -1) + eps) * weight`, with `weight` of the
    size of the last dimension of `x`.

    ```mlir
    %y = graph.rms_norm %x, %g {eps = 1.0e-05 : f32} : tensor<?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, Graph_F32Tensor:$weight, F32Attr:$eps);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` type($input) `,` type($weight)";
  let builders = [OpBuilder<(ins "mlir::Value":$input, "mlir::Value":$weight, "float":$eps), [{
    build($_builder, $_state, input.getType(), input, weight, $_builder.getF32FloatAttr(eps));
  }]>];
  let hasVerifier = 1;
}

def Graph_MatmulOp : Graph_Op<"matmul", [Pure]> {
  let summary = "activation times transposed weight";
  let description = [{
    `result[..., n] = sum_k x[..., k] * w[n, k]`: the weight is stored
    `[out, in]` as in PyTorch's `nn.Linear` and llama2.c, so each output is a
    dot product of two contiguous rows. The weight may be quantized
    (`!graph.q8_0`, `!graph.q4_0`, `!graph.q4_k`, `!graph.q6_k` elements): it
    is dequantized element by element inside the product, never copied to
    floats.

    `act_type`, when present, rounds the activation rows to that type before
    the product, as llama.cpp's CPU backend does (`graph-act-quant`): `f16`
    or `bf16` (then multiplied in f32), `!graph.q8_0` with Q8_0/Q4_0 weights
    or `!graph.q8_k` with Q4_K/Q6_K weights (8-bit blocks multiplied with the
    weight's integers in i32, then scaled). Without it the product is exact
    f32 math on the dequantized weight. The order in which products are
    summed is not part of the op: schedules choose it.

    ```mlir
    %y = graph.matmul %x, %w : tensor<?x64xf32>, tensor<172x64xf32> -> tensor<?x172xf32>
    %z = graph.matmul %x, %q {act_type = !graph.q8_0}
        : tensor<?x64xf32>, tensor<172x64x!graph.q4_0> -> tensor<?x172xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, Graph_WeightTensor:$weight,
                       OptionalAttr<TypeAttr>:$act_type);
  let builders = [OpBuilder<(ins "mlir::Type":$result, "mlir::Value":$input,
                                 "mlir::Value":$weight), [{
    build($_builder, $_state, result, input, weight, /*act_type=*/nullptr);
  }]>];
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight) `->` type($result)
  }];
  let hasVerifier = 1;
}

class Graph_BroadcastBinaryOp<string mnemonic, string what>
    : Graph_Op<mnemonic, [Pure, AllTypesMatch<["lhs", "result"]>]> {
  let summary = "elementwise " # what # " with trailing broadcast";
  let description = [{
    Elementwise }] # what # [{ of `lhs` and `rhs`, where `rhs` has the shape of
    the trailing dimensions of `lhs` (a bias vector broadcast over rows, or a
    tensor of the same shape). The result has the type of `lhs`.

    ```mlir
    %y = graph.}] # mnemonic # [{ %x, %b : tensor<?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$lhs, Graph_F32Tensor:$rhs);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
  let hasVerifier = 1;
}

def Graph_AddOp : Graph_BroadcastBinaryOp<"add", "sum">;
def Graph_MulOp : Graph_BroadcastBinaryOp<"mul", "product">;

def Graph_SiluOp : Graph_Op<"silu", [Pure, SameOperandsAndResultType]> {
  let summary = "x * sigmoid(x)";
  let description = [{
    The SiLU (swish) activation, elementwise: `x / (1 + exp(-x))`.

    ```mlir
    %y = graph.silu %x : tensor<?x172xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Graph_ElementwiseOp : Graph_Op<"elementwise", [Pure, IsolatedFromAbove,
    SingleBlock]> {
  let summary = "a fused chain of elementwise ops, computed in one pass";
  let description = [{
    The ops of the body (`graph.silu`, `graph.add`, `graph.mul`), applied
    element by element to `inputs`, in one loop nest: the intermediates are
    values in registers, never tensors in memory. The body's arguments are
    the inputs (of the result's shape, or of its trailing dimensions:
    broadcast); every body op computes a tensor of the result's type; the
    yielded value is the result. Each element is computed with the same
    operations, in the same order and precision, as the unfused ops would:
    fusion changes no bit. `graph-fuse-elementwise` builds it.

    ```mlir
    %h = graph.elementwise (%gate, %up) : (tensor<?x172xf32>, tensor<?x172xf32>) -> tensor<?x172xf32> {
    ^bb0(%g: tensor<?x172xf32>, %u: tensor<?x172xf32>):
      %s = graph.silu %g : tensor<?x172xf32>
      %m = graph.mul %s, %u : tensor<?x172xf32>, tensor<?x172xf32>
      graph.yield %m : tensor<?x172xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Graph_F32Tensor>:$inputs);
  let results = (outs Graph_F32Tensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $result) $body
  }];
  let hasVerifier = 1;
}

def Graph_YieldOp : Graph_Op<"yield", [Pure, Terminator,
    HasParent<"ElementwiseOp">]> {
  let summary = "the result of a graph.elementwise body";
  let arguments = (ins Graph_F32Tensor:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Graph_RopeOp : Graph_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding";
  let description = [{
    Rotates pairs of elements of every `head_dim`-wide head of row `s` by the
    angle `(pos0 + s) * theta^(-2i/head_dim)` for pair `i`. With
    `style = interleaved` the pairs are `(x[2i], x[2i+1])` (llama2.c, GGUF
    llama); with `style = half` they are `(x[i], x[i + head_dim/2])`
    (Hugging Face `rotate_half`, Qwen).

    `angles` is how the angles are computed, a numeric choice: `direct`
    (the default, as PyTorch: `pos * (1 / theta^(2i/head_dim))` in f32) or
    `iterated` (as llama.cpp's C code: `theta^(-2/head_dim)` multiplied up
    one pair at a time from `pos`, and each rotation's first product fused
    with the subtraction or addition that follows it); `graph-act-quant`
    chooses it.

    With `norm(%g)` (and `norm_eps`), each head is first RMS-normalised
    with gain `%g` (`head_dim` values), as `graph.rms_norm` over the head
    would do it: Qwen3's q/k norms, fused by `graph-fuse-rope-norm`. The
    normalised head is never stored.

    ```mlir
    %q2 = graph.rope %q, %pos0 {head_dim = 8 : i64, theta = 1.0e+04 : f64,
                                style = #graph.rope_style<interleaved>} : tensor<?x64xf32>
    %k2 = graph.rope %k, %pos0 norm(%g : tensor<8xf32>) {head_dim = 8 : i64,
              norm_eps = 1.0e-06 : f32, theta = 1.0e+04 : f64,
              style = #graph.rope_style<half>} : tensor<?x32xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, Index:$pos0,
                       Optional<Graph_F32Tensor>:$norm_weight, I64Attr:$head_dim,
                       F64Attr:$theta, Graph_RopeStyleAttr:$style,
                       DefaultValuedAttr<Graph_RopeAnglesAttr,
                                         "::llmc::graph::RopeAngles::direct">:$angles,
                       OptionalAttr<F32Attr>:$norm_eps);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $pos0 (`norm` `(` $norm_weight^ `:` type($norm_weight) `)`)?
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Graph_AttentionOp : Graph_Op<"attention", [AllTypesMatch<["q", "result"]>]> {
  let summary = "causal grouped-query attention through the KV cache";
  let description = [{
    For the `seq` rows of `q`, `k`, `v` at positions `pos0 .. pos0+seq-1`:
    stores `k` and `v` into layer `layer` of `cache` at those positions, then
    computes for each query head `h` (using KV head `h / (num_heads /
    num_kv_heads)`) softmax(scale * q·K^T) V over cache positions
    `0 .. pos0+s` (causal). `q` is `[seq, num_heads*head_dim]`, `k` and `v`
    are `[seq, num_kv_heads*head_dim]`, the result is shaped like `q`.

    The softmax sums its exponentials in f64 (as ggml does); the order of
    the other sums is a schedule's choice. Two attributes state llama.cpp's
    numerics (`graph-act-quant` sets them in that mode):

    - `kv_pad` (default 1): the probabilities are computed over the cache
      positions up to the context rounded up to a multiple of `kv_pad` (at
      most `max_seq`), those past a row's causal end being 0, as llama.cpp
      pads its KV view. p·V then sums whole multiples of the pad, so a
      schedule's lanes (a divisor of it) see the same terms as ggml's.
    - `softmax_block` (default 0): the exponentials are summed in f32 runs
      of `softmax_block` consecutive positions (past the end, zeros), the
      runs' sums in f64: ggml's soft_max sums each 16-wide vector
      horizontally. 0 sums every exponential in f64.
    - `kv_tile` (default 0): 0 computes each row's softmax in two passes
      over its scores (the numerics above, llama.cpp's without flash
      attention); n > 0 is flash attention: the positions in tiles of n,
      the row's running max, sum (f64, each tile's summed in f32) and output
      rescaled by exp(old max - new max) as each tile is added, the output
      divided by the sum at the end. Only a tile's scores exist at a time.
      A multiple of `kv_pad`; `softmax_block` must be 0.
    - `kv_splits` (default 1, flash attention only): a call of one token
      (decode) splits each row's positions into that many parts of about
      equal length (multiples of `kv_pad`, at least 16: a short context
      takes fewer parts), each with its own running max, sum and
      output, merged at the end (each part's weighted by exp(its max - the
      largest)): parts a schedule may run on threads of their own when the
      KV heads cannot fill the cores. Longer calls take one part.
    - `row_tiles` (default false, flash attention only): each row (token
      and part) keeps a scores tile of its own instead of the one per part
      that row after row reuses, so the rows share no buffer and may run
      at once (a GPU's threads; `graph-row-tiles`).
    - `q_tile` (default 1, without `row_tiles`): a prompt's rows in tiles
      of that many tokens that read the keys and values together, up to
      the causal end of the tile's last row (with `kv_tile`, tile of
      positions by tile): q·k and p·V over those positions for every row
      (each load of a key or value serves the tile's rows; p·V up to the
      last row's end rounded up to `kv_pad`), each row's max, exponentials
      and sum over its own causal positions and its probabilities zero
      after them (+0 products: each row's sums are those it adds alone, in
      either form's order). The tokens after the last whole tile, and a
      decode step, a row at a time (`graph-query-tiles`).
    - `round_to_cache` (default false): with a cache of another element
      type than f32 (f16), q and the probabilities are rounded to it before
      their products with the keys and values, as ggml's mul_mat converts
      its f32 operand to the cache's type (with `kv_tile`, the exponentials
      before their division by the sum, which comes after p.V). Without it
      they stay f32.

    A cache of f16 holds the keys and values rounded to f16 (to nearest
    even); the products read them back widened to f32.

    ```mlir
    %o = graph.attention %q, %k, %v, %cache, %pos0
        {layer = 0 : i64, num_heads = 8 : i64, num_kv_heads = 4 : i64,
         head_dim = 8 : i64, scale = 0.353553385 : f32}
        : tensor<?x64xf32>, tensor<?x32xf32>, tensor<?x32xf32>,
          !graph.kv_cache<layers = 5, max_seq = 512, kv_heads = 4, head_dim = 8, element_type = f32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$q, Graph_F32Tensor:$k, Graph_F32Tensor:$v,
                       Arg<Graph_KVCacheType, "the KV cache", [MemRead, MemWrite]>:$cache,
                       Index:$pos0, I64Attr:$layer, I64Attr:$num_heads,
                       I64Attr:$num_kv_heads, I64Attr:$head_dim, F32Attr:$scale,
                       DefaultValuedAttr<I64Attr, "1">:$kv_pad,
                       DefaultValuedAttr<I64Attr, "0">:$softmax_block,
                       DefaultValuedAttr<I64Attr, "0">:$kv_tile,
                       DefaultValuedAttr<I64Attr, "1">:$kv_splits,
                       DefaultValuedAttr<BoolAttr, "false">:$row_tiles,
                       DefaultValuedAttr<I64Attr, "1">:$q_tile,
                       DefaultValuedAttr<BoolAttr, "false">:$round_to_cache);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $cache `,` $pos0 attr-dict `:` type($q) `,` type($k) `,`
    type($v) `,` type($cache)
  }];
  let hasVerifier = 1;
}

def Graph_ReshapeOp : Graph_Op<"reshape", [Pure]> {
  let summary = "view the trailing dimensions with another shape";
  let description = [{
    Reinterprets a row-major tensor with another shape. The leading dimension
    is kept (it may be the dynamic sequence length); the static trailing
    dimensions must hold the same number of elements.

    ```mlir
    %h = graph.reshape %q : tensor<?x64xf32> -> tensor<?x8x8xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Graph_LastRowsOp : Graph_Op<"last_rows", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "the last rows of a tensor";
  let description = [{
    `result[i, ...] = input[n - count + i, ...]` for `i < count`, where `n` is
    the leading (row) dimension of `input`, which must be dynamic; the result
    has `count` rows. `count` must be in `[0, n]` (the caller of the entry
    point guarantees it; llmc/abi.h: 0 for a piece of a prompt before its
    last). `graph-output-rows` puts it on the
    entry's result, so that a prompt computes the logits of the rows the
    caller reads and not of every token, and moves it up through the ops
    that compute each row from the same row alone.

    ```mlir
    %y = graph.last_rows %x, %n_out : tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Graph_F32Tensor:$input, Index:$count);
  let results = (outs Graph_F32Tensor:$result);
  let assemblyFormat = "$input `,` $count attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // LLMC_DIALECT_GRAPH_GRAPHOPS_TD
