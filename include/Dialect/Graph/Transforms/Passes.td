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

def GraphInterleaveWeights : Pass<"graph-interleave-weights", "mlir::ModuleOp"> {
  let summary = "Interleave weights' rows for products in vector lanes";
  let description = [{
    Weight pre-packing: a Q8_0, Q4_0, Q4_K or Q6_K matrix that only llama.cpp-mode
    integer products read (`graph.matmul` with an 8-bit `act_type`) gets the
    `#graph.interleaved<rows = R, chunk = 4>` encoding, R rows' blocks side
    by side: the product then keeps one row per vector lane (its i32 sums,
    its f32 chain), each block's bytes of R rows one load, and no sum is
    reduced across lanes. R is the target's i32 lanes (16 with AVX-512, 8
    with AVX2), halved until it divides the row count; chunk 4 is the group
    an int8 dot-product instruction (VPDPBUSD) takes per lane.

    The interleaved Q4_0 and Q4_K products take the f32 steps of ggml's
    repacked kernels; llama.cpp runs those for matrices of a multiple of 8
    rows, so only those are interleaved (the others keep vec_dot's order of
    steps). The Q8_0 and Q6_K interleaved products keep vec_dot's (and for
    Q8_0 llamafile sgemm's) own steps, 8 lanes per row summed as
    hsum_float_8, so any multiple of 4 rows is interleaved. The table of a
    tied classifier, which the embedding also gathers from, is interleaved
    when it is Q8_0 or Q6_K (the gather reads its rows where the layout puts
    them; llama.cpp keeps such a table unrepacked, so its product runs
    vec_dot's steps, which only those two interleaved products keep); a
    parameter any other op reads stays plain. The artifact writer lays the
    bytes out as the type says; the size does not change, so
    `graph-layout-weights` places it as before.

    With `floats` (the exact mode), an f32, f16 or bf16 matrix that only
    f32 products (`graph.matmul` without `act_type`) and embedding gathers
    read is interleaved element by element, `#graph.interleaved<rows = R,
    chunk = E>` with R four vectors of the target's f32 lanes (64 with
    AVX-512; halved while it does not divide the rows, down to one vector)
    and E the element's bytes: the product keeps its outputs in the lanes,
    per element of the reduction one contiguous run of the group's rows,
    each multiplied by one broadcast activation (no horizontal sum), and a
    prompt's tile of tokens reuses every load. Its sums then run in order
    along the reduction (per block of it, where it is blocked), which the
    exact mode allows and the llama.cpp mode, whose products keep ggml's
    lanes, does not. Matrices whose rows are not a multiple of one vector
    stay plain.

    Input: after `graph-act-quant`, before `graph-layout-weights`.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu:x86-64-v3\"",
           "the target description (explicit: resolved by the driver)">,
    Option<"floats", "floats", "bool", /*default=*/"false",
           "interleave the float (f32, f16, bf16) matrices of f32 products "
           "(the exact mode) instead of the quantized ones of integer "
           "products">
  ];
}

def GraphSplitKV : Pass<"graph-split-kv", "mlir::ModuleOp"> {
  let summary = "Split decode's flash attention over the positions when its KV heads cannot fill the cores";
  let description = [{
    A flash attention (`graph.attention` with `kv_tile`, the exact mode)
    whose KV heads are fewer than the target's cores gets `kv_splits =
    cores` (a GPU: `ceil(2 * cores / KV heads)`, its compute units' count,
    two workgroups each): a decode step's rows split their positions into
    that many parts, each with its own running max, sum and output, and the
    parts take the threads (each core a share of every KV head's context;
    on a GPU, workgroups of their own) where the KV heads would leave some
    idle. The two-pass softmax (llama.cpp mode) is
    left alone: its sums are ordered over the whole row.

    Input: after `graph-act-quant`.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu:x86-64-v3\"",
           "the target description (explicit: resolved by the driver)">
  ];
}

def GraphRowTiles : Pass<"graph-row-tiles", "mlir::ModuleOp"> {
  let summary = "Give each row of a GPU's flash attention a scores tile of its own";
  let description = [{
    On a GPU target, every flash attention (`graph.attention` with
    `kv_tile`) gets `row_tiles`: each row (token and part) computes its
    scores in a tile of its own, so that the rows share no buffer and the
    GPU schedule can run them at once. On a CPU the rows of a thread run in
    turn and reuse one tile, which stays in the cache; nothing changes.

    Input: after `graph-act-quant` (and `graph-split-kv`).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu:x86-64-v3\"",
           "the target description (explicit: resolved by the driver)">
  ];
}

def GraphQueryTiles : Pass<"graph-query-tiles", "mlir::ModuleOp"> {
  let summary = "Run a CPU's attention over tiles of query rows";
  let description = [{
    On a CPU target, every `graph.attention` (flash attention or the
    two-pass softmax, without `row_tiles`) gets `q_tile`: a prompt's rows in
    tiles of that many tokens that read the keys and values together. One
    token's q·k and p·V load a key or value per product (their data from
    L2 when a head's context outgrows L1, at the rate L2 delivers); a tile
    of rows shares each load among its rows, whose accumulators the
    schedule keeps in registers: 4 rows on a target with 32 vector
    registers, 2 with 16 (a register tile of 4 vectors per row). Each
    row's sums keep their order (the two-pass form's are ggml's).
    A decode step, and the tokens after a prompt's last whole tile, run a
    row at a time. A GPU target keeps one row per tile (its rows run at
    once).

    Input: after `graph-act-quant` (and `graph-split-kv`).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu:x86-64-v3\"",
           "the target description (explicit: resolved by the driver)">
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
    default) removes them but the pad: exact sums run in any order, and a
    view padded to 64 leaves p·V whole lanes and no ordered remainder.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"exact\"",
           "exact (f32 activations) or llama.cpp">
  ];
}

def GraphFuseElementwise : Pass<"graph-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse chains of elementwise ops into one graph.elementwise";
  let description = [{
    An elementwise op (`graph.silu`, `graph.add`, `graph.mul`) whose result
    is used once, by an elementwise op of the same result type in the same
    block, is computed inside that op's loop instead of into a tensor of its
    own: each such chain (a tree: the MLP's `silu(gate) * up`, an add of a
    product, ...) becomes one `graph.elementwise` whose body holds the ops.
    The intermediate is never written to memory and read back, and a loop
    nest (with its pass over the rows and, on several threads, its fork and
    join) goes per chain. The body computes each element as the ops did:
    the logits do not change by a bit.

    Input: graph functions. Output: chains of two or more elementwise ops
    replaced by `graph.elementwise`; single ops stay.
  }];
}

def GraphFuseRopeNorm : Pass<"graph-fuse-rope-norm", "mlir::ModuleOp"> {
  let summary = "Fuse a per-head RMS norm into the RoPE that follows it";
  let description = [{
    Qwen3's q/k norms normalise each head before RoPE: `graph.reshape` to
    `[seq, heads, head_dim]`, `graph.rms_norm`, `graph.reshape` back, then
    `graph.rope`. Where the norm's result feeds only that rope, the chain
    becomes one `graph.rope ... norm(%g)`: its lowering sums each head's
    squares and normalises the two elements of a pair as it loads them, so
    the normalised heads are never written and read back, and the
    normalisation's loop nest goes. Each element is computed with the same
    operations in the same order: the logits do not change by a bit.

    Input: graph functions. Output: such chains replaced by a rope with a
    `norm` operand; everything else unchanged.
  }];
}

def GraphKVCacheType : Pass<"graph-kv-cache-type", "mlir::ModuleOp"> {
  let summary = "Store the KV cache in another element type (f16)";
  let description = [{
    Gives every `!graph.kv_cache` argument of the module's functions the
    element type `element-type` (`f16` or `f32`): an f16 cache holds half the
    bytes (llama.cpp's default) and decode's attention reads half as much.
    The attention stores keys and values rounded to it (round to nearest
    even) and computes in f32 on what it reads back; with `round_to_cache`
    (llama.cpp mode) its f32 operands, q and the probabilities, are rounded
    to it too before their products, as ggml's mul_mat converts its f32
    operand to the f16 cache's type.

    Input: functions with `!graph.kv_cache` arguments (the entry).
    Output: the same, the caches of the element type.
  }];
  let options = [
    Option<"elementType", "element-type", "std::string", /*default=*/"\"f16\"",
           "the cache's element type: f16 or f32">
  ];
}

def GraphKVLayout : Pass<"graph-kv-layout", "mlir::ModuleOp"> {
  let summary = "Lay out the KV cache for a CPU's attention: values by position and keys transposed, or values in blocks of positions";
  let description = [{
    On a CPU target, when every `graph.attention` runs flash attention
    (`kv_tile`, the exact mode), the `!graph.kv_cache` arguments get
    `values_by_position`: the values stored as the keys are,
    [position][head_dim], not transposed. A decode step then stores its
    values as one contiguous row (transposed, each of its `head_dim`
    elements is a cache line of its own, read for ownership from memory),
    and p·V reads the context's values front to back, a row of the head dim
    per position in lanes (transposed, `head_dim` rows of positions
    `max_seq` apart). The two-pass softmax (llama.cpp's mode) keeps the
    values transposed: its p·V sums each row's positions in ggml's order.
    A GPU target keeps them too (its p·V takes the positions in lanes).

    The two-pass softmax on a CPU gets `values_block` instead, one f32
    vector's lanes (16 with AVX-512, 8 with AVX2), where `max_seq` is a
    multiple of it: the transposed values in blocks of that many positions,
    [position / B][head_dim][B]. p·V sums the same positions in the same
    lanes and order, but a block of the context is one contiguous run for
    all of the head's rows (transposed, each row's few lines `max_seq`
    positions apart: at decode's short contexts, hundreds of short streams
    the hardware prefetcher does not follow), and a step's `head_dim`
    stores fall in consecutive lines of one block.

    The keys get `keys_by_dim`, the transposed layout the values leave:
    [head_dim][position]. q·k then takes the positions in lanes, each
    element of the head dim a broadcast of the query times a row of the
    context's keys, every product an FMA into its position's own lane; by
    position, each position's dot product ended in a horizontal sum (a tree
    of shuffles and adds per position, on the ports the FMAs use). A decode
    step stores its keys as `head_dim` elements a row apart, as the
    transposed values were (llama.cpp's mode keeps its keys by position:
    ggml's vec_dot order).

    Input: after `graph-act-quant` (and `graph-kv-cache-type`).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu:x86-64-v3\"",
           "the target description (explicit: resolved by the driver)">
  ];
}

def GraphOutputRows : Pass<"graph-output-rows", "mlir::ModuleOp"> {
  let summary = "Compute only the rows of the entry's result the caller reads";
  let description = [{
    A prompt of n tokens needs the logits of its last token to generate, or
    of all n to score them; computing every row wastes the head matmul
    (about a third of a prompt's time with a 32000-word vocabulary). This
    pass gives the entry function `entry` a trailing `index` argument, the
    number of rows to return (marked `llmc.output_rows`; llmc/abi.h's
    `n_out`), puts `graph.last_rows` on its result and moves it up through
    every op that computes a row from the same row of its operands alone
    (`rms_norm`, `matmul`, `add`, `mul`, `silu`, `reshape`), as long as all
    users of the value want the same rows. It stops at ops that mix rows
    (`attention`, `rope` with its positions, `embedding`): in a decoder that
    is the last layer's attention, so the final norm, the head and the last
    layer's output projection and MLP run on `n_out` rows.

    Input: `entry` with one result whose leading dimension is dynamic.
    Output: the same function with the extra argument; a function that
    already has it is left alone, and a module without `entry` is untouched.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the entry function">
  ];
}

#endif // LLMC_DIALECT_GRAPH_TRANSFORMS_PASSES_TD
