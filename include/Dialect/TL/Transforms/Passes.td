//===- Passes.td - tensor-loop dialect passes --------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_TL_TRANSFORMS_PASSES_TD
#define LLMC_DIALECT_TL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TLReleaseBuffers : Pass<"tl-release-buffers", "mlir::func::FuncOp"> {
  let summary = "Free every function-level buffer after its last use";
  let description = [{
    Lowering from `graph` allocates one buffer per intermediate tensor at the
    top level of the function, where control flow is straight-line. This pass
    inserts a `memref.dealloc` for each such `memref.alloc` right after the
    last top-level operation that uses it, directly or through a view
    (`ViewLikeOpInterface`) or inside a nested loop nest. Buffers that escape
    (returned, or stored/passed to a call) are left alone.

    Input: `memref.alloc`s at the top level of the function body.
    Output: each non-escaping one has exactly one `memref.dealloc`.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def TLInlineEpilogues : Pass<"tl-inline-epilogues", "mlir::func::FuncOp"> {
  let summary = "Compute elementwise consumers in the nest that produces their input";
  let description = [{
    Applies `reverse_compute_inline` (include/Dialect/TL/Transforms/Schedule.h)
    to every block that allows it, in program order: an elementwise block
    that reads, once and element for element, a buffer one spatial block
    writes is computed where that block stores each element, and its own
    loop nest and the intermediate buffer go. In decode, the quantized
    products end in such a block (the lanes' sums into the output): the
    residual add after the attention's output projection and after the
    MLP's down projection, and the MLP's silu·mul after the up projection,
    become part of it (three loop nests, and on several threads three
    fork/joins, fewer per layer). Each element is computed as before:
    no bit changes. Blocks that do not qualify are left as they are.

    Input: canonical nests (before the schedule, which then sees the fused
    blocks). Output: the same computation in fewer nests.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect"];
}

def TLInlinePrologues : Pass<"tl-inline-prologues", "mlir::func::FuncOp"> {
  let summary = "Compute cheap elementwise producers where their consumers load them";
  let description = [{
    Applies `compute_inline` (include/Dialect/TL/Transforms/Schedule.h) to
    every block alone in its loop nest that is a cheap elementwise map: no
    reduction, no transcendental op (`math` ops other than fma), at most
    two consumers, each of which reads an element of its output at most
    once per load (every consumer variable in the index: no reuse that
    would repeat the computation, as a matmul's activations would). The
    intermediate is never written and read back; each element is computed
    with the same operations: no bit changes. rms_norm's scale block, which
    computes its row's inverse root (a sqrt and two divisions per element),
    is not cheap: moving it into the two blocks that quantize a matmul's
    activations would repeat those; the inverse in a nest of its own, which
    makes the scale cheap, measured slower on Qwen3 q4_K_M decode
    (docs/performance.md, issue 9 step 11).

    Input: canonical nests (before the schedule). Output: the same
    computation in fewer nests and buffers.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect"];
}

def TLPlanArena : Pass<"tl-plan-arena", "mlir::ModuleOp"> {
  let summary = "Place function-level buffers in one arena, by liveness";
  let description = [{
    Replaces each function-level `memref.alloc` whose size is a polynomial
    with non-negative coefficients in the function's arguments (index
    arguments and dynamic sizes of memref arguments: tokens, pos0, ...) by a
    `memref.view` into one byte buffer, the arena, that the caller owns:
    no allocation or free per call. Two buffers share bytes only when their
    live ranges (first to last top-level use, through views and loop nests)
    do not overlap.

    Offsets and sizes are polynomials in those arguments, kept per monomial
    (1, tokens, tokens*pos0, ...); buffers that are live together are
    ordered in every coefficient, so they are disjoint for every argument
    value, and every coefficient is a multiple of 64 bytes (every buffer
    64-byte aligned when the arena is). Placement is greedy, largest buffer
    first (sized at 256 for every argument), lowest end first.

    The arena is a trailing `memref<?xi8>` argument marked `llmc.arena`,
    added to every public function with a body (the entry's ABI) and to
    every private function that needs one; a call passes the caller's arena
    past the caller's own buffers. Each such function gets `llmc.arena`: the
    arena bytes it needs, a list of plans (the arena must hold the largest),
    each a sum of terms `{bytes, of}`, `bytes` times the product of the
    arguments named in `of` ("argN", or "argN.D" for dim D of argument N).

    Buffers that escape (returned, passed to a call, stored, already freed)
    or whose size is not such a polynomial stay allocations.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def TLVectorize : Pass<"tl-vectorize", "mlir::func::FuncOp"> {
  let summary = "Split and vectorize the innermost spatial loop of each block";
  let description = [{
    For every tl.block, in program order, whose innermost enclosing loop has a
    constant extent that is a multiple of `width` and may run its iterations
    independently (it binds only spatial variables and the block writes
    distinct elements in distinct iterations): splits that loop by `width`
    and marks the inner loop `vectorized`. It applies the same schedule
    primitives (`split`, `vectorize`) as the Python schedule API, so the two
    produce the same IR for the same decisions. Loops that do not qualify
    are left alone.
  }];
  let options = [
    Option<"width", "width", "int64_t", /*default=*/"8",
           "vector width in elements">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def TLCSENests : Pass<"tl-cse-nests", "mlir::func::FuncOp"> {
  let summary = "One nest where two compute the same buffer";
  let description = [{
    Common subexpression elimination of loop nests: a top-level nest that
    writes one fresh buffer (a `memref.alloc` only it writes) exactly as an
    earlier nest wrote another (`NestEquivalence`: the same operations and
    attributes over the same values, equal constants aside), with nothing in
    between writing what the earlier one read or wrote (compared through
    views), is erased and its buffer replaced by the earlier one's. Applied
    in order, a chain of such nests goes at once: the llama.cpp-mode
    activations that several matmuls quantize from one input (q, k and v;
    gate and up: the block maxima, scales, bytes, and sums of the same
    width), the RoPE angles every layer computes alike.

    Input: canonical nests at the top level of a function (after
    `convert-graph-to-tl`), before buffers are released.
  }];
  let statistics = [
    Statistic<"numMerged", "merged", "nests replaced by an equal earlier one">
  ];
}

def TLSpecializeDecode : Pass<"tl-specialize-decode", "mlir::ModuleOp"> {
  let summary = "Give the entry point a decode version (one token) and a prefill version";
  let description = [{
    Prefill (many tokens, one call) and decode (one token per call) want
    different schedules: a GEMM and a GEMV. This clones the public function
    `entry` into `<entry>_decode`, where the number of tokens (dimension 0 of
    its first argument) is the constant 1, as is the number of output rows
    (the argument marked `llmc.output_rows`, graph-output-rows), and
    `<entry>_prefill`, and makes
    `entry` call the one that fits. After canonicalization the decode
    version's loops over tokens are gone and its buffers have static
    shapes; each version is marked `llmc.phase = "decode" | "prefill"`,
    which the default schedule keys on.

    Input: a public `func.func @<entry>` whose first argument is a
    `memref<?x...>` of tokens. Output: the same function, dispatching.
  }];
  let options = [
    Option<"entry", "entry", "std::string", /*default=*/"\"forward\"",
           "the entry point to specialize">
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect"];
}

def TLDefaultSchedule : Pass<"tl-default-schedule", "mlir::ModuleOp"> {
  let summary = "Schedule every loop nest for the target";
  let description = [{
    Applies the schedule primitives to every canonical nest of the module,
    chosen from the target description (`target`, an explicit
    description such as `cpu:znver4`) and the nest's structure:
    - elementwise nests: the innermost loop in vector lanes (the target's
      width, the remainder peeled), the outermost loop parallel when the
      nest is big enough to pay for threads;
    - reductions (matmuls, norms, softmax, q·k): the reduction in lanes,
      factored into per-lane partials (rfactor) and summed in a halving tree
      (the order of ggml's dot products: 64 lanes for one row, 16 for
      several); matmuls register-tiled (4 rows of the weight, and 4 tokens
      in prefill), with their partials in registers; prefill's weight rows
      in chunks within half the L2 cache and its reduction in blocks whose
      activations stay within half the L1 cache, or as `tuning` chooses
      for the matmul's key (`matmul.prefill.k<K>.n<N>.<types>`, recorded
      on the nest as `llmc.tune` for `llmc tune`);
    - the int8 dot products of llama.cpp mode: groups of four bytes reduced
      into i32 lanes (VNNI's vpdpbusd where the target has it), the f32
      steps in the lanes of ggml's kernels;
    - p·V: the head dimension in lanes;
    - loops of constant extent that index a register tile, or choose a bit
      field (a shift amount), unrolled;
    - decode: a loop streaming a weight (each iteration the next run of its
      bytes) prefetches the target's `prefetch` distance ahead
      (`tl.prefetch`): the outermost serial one, else the parallel loop
      (tiles of a dense weight's rows, consecutive on each thread); an f32
      or f16 weight only at a distance `llmc tune` chose (the rule reads
      it a row at a time and leaves it to the hardware's prefetcher).
    Decode and prefill versions (`tl-specialize-decode`) get their own
    schedules from the shapes their nests have.

    A GPU target (`vulkan...`, `cuda...`) gets the GPU mapping instead
    (`GPUSchedule.cpp`, docs/design.md "GPU targets"): every nest one
    launch; constant-output reductions shared by a workgroup (partials in
    workgroup memory, summed by subgroup operations or a tree), prompt
    matmuls in register tiles of 8 tokens x 4 outputs per thread (on a GPU device, their
    activations staged in workgroup memory chunk by chunk), decode attention's nests
    as the steps of a workgroup per head, and the independent top loops on
    the grid.

    Equal nests of a function (the layers' copies of one computation, equal
    up to the buffers they use and their blocks' names: NestEquivalence)
    are scheduled once; the others get a copy of that schedule over their
    own values, their blocks named as their own (`reuse=false` schedules
    each nest on its own, with the same result, more slowly).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu:x86-64-v3\"",
           "the target description (explicit: resolved by the driver)">,
    Option<"reuse", "reuse", "bool", /*default=*/"true",
           "schedule each kind of nest once and copy the schedule to equal nests">,
    Option<"tuning", "tuning", "std::string", /*default=*/"\"\"",
           "measured choices per kernel key (Target/Tuning.h: "
           "key=r<R>c<C>;... or *=r<R>c<C>); a key it does not name keeps "
           "the rule (r2c2)">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::gpu::GPUDialect"];
}

def TLSchedule : Pass<"tl-schedule"> {
  let summary = "Apply a schedule written as a script of primitive calls";
  let description = [{
    Runs the schedule primitives (`Dialect/TL/Transforms/Schedule.h`, the
    same C++ the default schedule and Python drive) named in `script`, in
    order. Statements are separated by `;`; blocks are named, loops are
    given as a block and the position of the loop among those around it at
    that moment (0 = outermost):

    ```
    split(matmul, 2, 16)            # split loop 2 of block "matmul" by 16
    split_peel(matmul, 2, 16)       # the same with the remainder peeled off
    reorder(matmul, 0, 2, 1)        # loops 0, 2, 1 of the block, in order
    rfactor(matmul, 3)              # lanes: loop 3 (or several: 3, 4)
    rfactor_at(matmul, 2)           # from loop 2 inward, no lanes (or 2, 3)
    tree_reduce(matmul)             # or tree_reduce(matmul, 16): per 16 lanes
    contract(matmul_rf)             # acc + a * b as one fma
    reverse_compute_inline(add)     # add computed in its producer
    absorb_add(add)                 # the same into a reduction: its init adds x
    compute_inline(rms_norm_scale)  # computed where its consumers load it
    reverse(matmul_rf, 4)           # loop 4 of the block runs backwards
    distribute(scores, 0)           # loop 0 split into a loop per nest of its body
    expand(lanes_init, 0, 1)        # its write 0, a stack buffer, sliced by loop 1
    stage(matmul, 0, 2)             # its read 0 staged in a stack buffer at loop 2
    hoist(matmul, 0, 0)             # its widening 0's operand computed at loop 0
    parallel(matmul, 0); vectorize(matmul_rf, 3); unroll(matmul, 1)
    decompose_reduction(matmul, 1); bind(matmul, 0, threadIdx.x)
    mma(matmul, 3)                  # loops 3, 4, 5: a matrix band (kind mma)
    library(matmul, 0)              # loops 0, 1, 2: the GEMM library's band
    split_halves(matmul, 0)         # its f32 read 0 as two f16 halves
    dequant_halves(matmul)          # its computed weight as f16 halves [N, K]
    fuse_launches(q, k, v)          # the launches of these blocks' nests as one
    ```

    A primitive that refuses reports its located error and the pass fails.
    Used by the lit tests of the primitives and to replay schedules from
    `llm-opt`.
  }];
  let options = [
    Option<"script", "script", "std::string", /*default=*/"\"\"",
           "the primitive calls, `;`-separated">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect"];
}

def TLOutlineKernels : Pass<"tl-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Make each top-level loop nest a function, one per distinct kernel";
  let description = [{
    A decoder repeats the same loop nests in every layer: the same shapes
    over other buffers. This pass moves each loop nest at the top level of a
    function (a `tl.for` and everything in it) into a private function of
    its own, marked `llmc.kernel`, and calls it there; the values the nest
    uses from outside become arguments (constants are cloned in, so bounds
    and shapes stay static), a slice's static offset becomes a dynamic one
    at the call (`memref.cast`), so one function serves every slice. Then
    kernels that are equal, up to their blocks' names, become one: the code
    generator compiles each distinct kernel once, not once per layer; the
    kernels are `noinline` (`passthrough`), so that LLVM does not copy them
    back into every call.

    Input: functions whose bodies are one block (after `tl-release-buffers`).
    Output: their top-level nests as `func.call`s of `llmc.kernel`
    functions, no two of which are equal.
  }];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

def TLEstimateCost : Pass<"tl-estimate-cost", "mlir::ModuleOp"> {
  let summary = "Record each kernel's work per call, in the call's sizes";
  let description = [{
    The analytical cost model (`Dialect/TL/Analysis/Cost.h`) applied to
    every kernel `tl-outline-kernels` made, at each of its calls: the sizes
    the call passes (a prompt length, pos0) become polynomials in the
    caller's arguments (`argN`, `argN.D` as tl-plan-arena names them, a
    floor over a constant `argN.D/4`; in a module with `@forward`, only
    where the caller takes its arguments, as its prefill and decode clones
    do), and the
    kernel's floating-point and integer operations, multiply-add issue
    slots and distinct bytes are summed over its calls from each caller.
    The module gets `llmc.kernels`, one dictionary per kernel and caller in
    the order of their first call: `name`, `caller`, `phase` (the caller's
    `llmc.phase`, or its name), `calls`, `flops`, `int_ops`,
    `instructions`, `bytes` (each a list of terms `{c, of}`: coefficient
    times the product of the named sizes), `parallel` (the iterations its
    threads split, at its first call), `trips` (of its own outer loop: below
    one, the call does nothing) and `exact`.
    The artifact's metadata carries them; the runtime's profile divides
    them by the machine's rates and sets the prediction beside the measured
    time of each kernel (`llmc bench --profile`).

    Input: the output of `tl-outline-kernels`. The IR is not changed.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cpu:x86-64-v3\"",
           "the target description (its vector width)">,
    Option<"tuning", "tuning", "std::string", /*default=*/"\"\"",
           "measured choices per kernel key (Target/Tuning.h: "
           "key=r<R>c<C>;..., or *=r<R>c<C> for every key); a key it does "
           "not name keeps the rule">,
  ];
}

def TLVerifyParallel : Pass<"tl-verify-parallel"> {
  let summary = "Check that every parallel, vectorized and thread_bound loop is independent";
  let description = [{
    Runs the independence analysis of the schedule primitives
    (`Dialect/TL/Analysis/Independence.h`) again on every loop whose kind
    runs iterations at once, so that IR from any source (a Python
    schedule, hand-written IR, a later pass) cannot reach code generation
    with a kind that would race: no such loop may carry a reduction
    variable, and the elements its iterations write must be disjoint (or
    in buffers private to an iteration). Parallel loops may not nest. The
    pipeline runs it at the end of the tl phase. Errors are located at the
    loop, with a note at the block.
  }];
}

#endif // LLMC_DIALECT_TL_TRANSFORMS_PASSES_TD
