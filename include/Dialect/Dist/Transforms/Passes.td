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
    `dist.sharding` attribute where it is not replicated (an axis both
    partial and splitting a dimension stays partial). A weight a product
    reads (a `graph.param`) without a sharding of its own takes the one the
    product's input implies, recorded on the param: annotating Q, K, V, gate
    and up by their output columns gives the whole Megatron layer (O and
    down split by their rows). An argument's sharding is checked as
    `dist.shard`'s. The rules:

    - `graph.matmul` (x[.., K] times w[N, K]): the result's rows are x's,
      its columns w's rows' axes; where x's K is split and w is not
      sharded, w takes the same split of its K; w's K split makes the
      result a partial sum over those axes.
    - `graph.embedding`: the result's columns are the table's; a table
      split by rows (vocabulary-parallel) gives a partial sum.
    - `graph.rms_norm`: rows as the input's, the normalised dimension
      whole (the sum of squares needs it).
    - `graph.rope`: the input's split of whole heads; rows whole (a row's
      angle is its position).
    - `graph.attention`: Q's split of heads where K and V split alike (or
      not at all) and the heads and KV heads divide evenly (each rank
      holds its KV heads of the cache); rows whole (a row reads every
      earlier row's keys and values).
    - `graph.add`: operands aligned from the right; a dimension split in
      either is split in the result; partial where both are partial over
      the same axes. `graph.mul`, `graph.silu`, `graph.elementwise` alike,
      never partial (not linear in a sum).
    - `graph.reshape`: the rows kept; a split of the last dimension goes to
      the first trailing dimension of the other shape where it divides.
    - `graph.last_rows`: the input's columns, rows whole, partial where the
      input is (the rows of a partial sum are the partial sums of the rows).

    A partial operand of an op that cannot take one, or an operand laid
    out otherwise than its op needs, is resolved by partitioning (a
    collective); propagation only records the layouts.
  }];
  let dependentDialects = ["::llmc::dist::DistDialect"];
}

def DistPlan : Pass<"dist-plan", "mlir::ModuleOp"> {
  let summary = "Choose how to shard a model over a mesh, by a cost model";
  let description = [{
    For a mesh of `mesh` ranks (`2`, `4`, `2x2`: one size per axis), gives
    each axis a role, tensor parallel (`tp`: Megatron's layout) or pipeline
    stages (`pp`: consecutive layers per stage), and keeps the assignment
    with the least predicted time per decoded token among those that fit
    `memory` bytes a rank (0: no limit). The cost model, per token:

    - compute: the bytes of weights each token reads, divided by the
      tensor-parallel ranks and read at `memory-bandwidth` bytes a second
      (decode is bandwidth-bound; the stages of a pipeline run one after
      the other for one token, so they do not divide it);
    - tensor parallel over t ranks: two all-reduces of a hidden row per
      layer (after O and after down), one after the vocabulary-parallel
      embedding and an all-gather of the logits, each a ring over the
      axes' slowest link (all-reduce `2 (t - 1) / t * bytes / bandwidth +
      2 (t - 1) * latency`, all-gather half that);
    - pipeline of p stages: p - 1 sends of a hidden row and one message
      of the sampled token back to the first stage;
    - memory a rank: its share of the layers' weights (divided by t and
      p), of the embedding and head (by t) and of the KV cache (by t and
      p).

    A pipeline runs a prompt in micro-batches of k tokens, each stage at
    work on its own at once: n tokens take `(ceil(n / k) + p - 1) t(k)`,
    t(k) the largest stage's time for k tokens (its products' FLOPs at
    `flops` plus its weights read and unpacked once a call at
    `memory-bandwidth`, the rows' send
    over the pp link, tp's all-reduces of k rows). Small pieces shorten the
    pipeline's fill and drain, large ones read the weights fewer times; the
    plan keeps the k among 8, 16, .., 512 with the least time for a prompt
    of 512 tokens (llama-bench's pp512), 0 when that is the whole prompt,
    or `micro-batch` where given (an error with `roles` that make no
    pipeline). Attention's FLOPs are left out (short prompts' are small
    beside the products'); so is the head, which runs on the last row.

    Tensor parallelism needs the heads, KV heads, FFN width and
    vocabulary divisible by t; a pipeline at most one stage per layer.
    Links (`bandwidth` and `latency`, one value per axis or one for all)
    default to one host's shared memory. The chosen plan becomes a
    `dist.mesh @mesh` (axes named by role), `dist.shard` annotations of
    the Q, K, V, gate and up weights (by output columns), of the embedding
    table and the head (by vocabulary rows) for tensor parallelism (from
    which `dist-propagate` derives the rest), and the module attribute
    `dist.plan` (the roles, each stage's first layer, the predicted
    seconds per token and bytes a rank, the micro-batch and the predicted
    seconds of a 512-token prompt); with `print`, a report of every
    candidate on stderr. A model too large for every plan is an error.
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"2\"",
           "the mesh's shape: ranks per axis, e.g. 2, 4, 2x2">,
    ListOption<"bandwidth", "bandwidth", "double",
               "bytes a second of each axis's link (one value: all axes)">,
    ListOption<"latency", "latency", "double",
               "seconds a message of each axis's link (one value: all axes)">,
    Option<"memoryBandwidth", "memory-bandwidth", "double",
           /*default=*/"2.0e10", "bytes a second a rank reads its weights at">,
    Option<"memory", "memory", "double", /*default=*/"0",
           "bytes a rank may hold (0: no limit)">,
    Option<"flops", "flops", "double", /*default=*/"5.0e10",
           "FLOP a second a rank computes a prompt's products at">,
    Option<"microBatch", "micro-batch", "int64_t", /*default=*/"-1",
           "tokens a pipeline's stages take from a prompt at once (0: all; "
           "-1: the cost model's choice)">,
    Option<"print", "print", "bool", /*default=*/"false",
           "print the candidates and the chosen plan on stderr">,
    ListOption<"roles", "roles", "std::string",
               "each axis's role, tp or pp: this plan, not the cost "
               "model's choice (still checked and costed)">
  ];
  let dependentDialects = ["::llmc::dist::DistDialect"];
}

def DistPartition : Pass<"dist-partition", "mlir::ModuleOp"> {
  let summary = "Per-rank programs with explicit collectives";
  let description = [{
    Rewrites a function whose values carry shardings (`dist-propagate`)
    into the program every rank of the mesh runs (SPMD): each value takes
    its local type (a split dimension divided by its axes' ranks), and
    where an operand is laid out otherwise than its op needs, the
    collective that makes it so is inserted: a partial sum the op cannot
    take -> `dist.all_reduce` over its partial axes; a split dimension the
    op needs whole -> `dist.all_gather`. What each op needs:

    - `graph.matmul`: the input's K split as the weight's K, no partial.
    - `graph.embedding`: ids whole; a table split by rows becomes the
      rank's rows (`offset(%o)`, `%o` from `dist.axis_index`), the result
      a partial sum.
    - `graph.rms_norm`: the normalised dimension whole, no partial.
    - `graph.rope`, `graph.attention`: their result's split of whole
      heads; attention's `num_heads` and `num_kv_heads` become the rank's,
      and so does the function's `!graph.kv_cache` (each rank holds its KV
      heads).
    - `graph.add`: operands as the result (both partial where it is);
      `graph.mul`, `graph.silu`: as the result, never partial.
    - `graph.reshape`, `graph.last_rows`: as propagation laid them out.
    - `func.return`: whole values (the logits gathered).

    A sharded `graph.param` takes its local type and keeps its
    `dist.sharding`: the artifact writer slices each rank's part of the
    weight from the model file. Every other `dist.sharding` attribute and
    `dist.shard` annotation is gone after the pass. A layout that would
    need a slice of a whole activation, or a param two shardings, is an
    error at the op.
  }];
  let dependentDialects = ["::llmc::dist::DistDialect",
                           "::mlir::arith::ArithDialect"];
}

def DistStage : Pass<"dist-stage", "mlir::ModuleOp"> {
  let summary = "One pipeline stage's program";
  let description = [{
    Where the module's plan (`dist.plan`, from dist-plan) has pipeline
    stages, cuts `@forward` down to stage `stage`'s layers (the plan's
    first layer of each stage): the residual rows entering the stage come
    from the previous stage (`dist.recv` over the plan's pp axes; the first
    stage looks up the embedding), the rows leaving it go to the next
    (`dist.send`); the last stage computes the logits and sends them to
    every other stage, which returns them, so that every rank's entry
    returns the same logits. The layers of other stages, the embedding
    (but on the first stage) and the head (but on the last) are removed,
    the stage's layers renumbered from 0 and the KV cache holds only them.
    The stage's index is recorded as the module's `dist.stage`. The
    decoder must be a chain of residual layers (the embedding's rows, then
    an add after each layer's attention and after its MLP). Without
    pipeline stages in the plan the pass does nothing.
  }];
  let options = [
    Option<"stage", "stage", "int64_t", /*default=*/"0",
           "the stage to keep (0 .. stages - 1)">
  ];
  let dependentDialects = ["::llmc::dist::DistDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // LLMC_DIALECT_DIST_TRANSFORMS_PASSES_TD
