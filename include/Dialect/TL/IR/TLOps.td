//===- TLOps.td - tensor-loop dialect operations -----------*- tablegen -*-===//
#ifndef LLMC_DIALECT_TL_TLOPS_TD
#define LLMC_DIALECT_TL_TLOPS_TD

include "Dialect/TL/IR/TLDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/LoopLikeInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def TL_LoopKind : I32EnumAttr<"LoopKind", "how a tl.for loop executes", [
    I32EnumAttrCase<"serial", 0>,
    I32EnumAttrCase<"parallel", 1>,
    I32EnumAttrCase<"vectorized", 2>,
    I32EnumAttrCase<"unrolled", 3>,
    I32EnumAttrCase<"thread_bound", 4>,
    I32EnumAttrCase<"mma", 5>,
    I32EnumAttrCase<"library", 6>
  ]> {
  let cppNamespace = "::llmc::tl";
  let genSpecializedAttr = 0;
}
def TL_LoopKindAttr : EnumAttr<TL_Dialect, TL_LoopKind, "loop_kind"> {
  let assemblyFormat = "`<` $value `>`";
}

def TL_IterKind : I32EnumAttr<"IterKind", "the role of a block iteration variable", [
    I32EnumAttrCase<"spatial", 0>,
    I32EnumAttrCase<"reduce", 1>
  ]> {
  let cppNamespace = "::llmc::tl";
  let genSpecializedAttr = 0;
}
def TL_IterKindAttr : EnumAttr<TL_Dialect, TL_IterKind, "iter_kind"> {
  let assemblyFormat = "`<` $value `>`";
}
def TL_IterKindArrayAttr : TypedArrayAttrBase<TL_IterKindAttr, "iteration kinds">;

def TL_YieldOp : TL_Op<"yield", [Pure, Terminator,
                                 ParentOneOf<["ForOp", "BlockOp"]>]> {
  let summary = "terminates the region of a tl.for or tl.block";
  let description = [{
    The implicit terminator of `tl.for` and `tl.block` regions; it carries no
    values (loops over buffers have no loop-carried SSA values).

    ```mlir
    tl.yield
    ```
  }];
  let assemblyFormat = "attr-dict";
}

def TL_ForOp : TL_Op<"for", [SingleBlockImplicitTerminator<"YieldOp">,
                             RecursiveMemoryEffects]> {
  let summary = "a loop with an execution kind";
  let description = [{
    Runs its body for `%iv = lb, lb + step, ... < ub`. The `kind` says how the
    iterations execute: `serial` in order; `parallel` in any order or at once
    (the body must not carry dependences between iterations); `vectorized`
    as SIMD lanes; `unrolled` fully unrolled; `thread_bound` mapped onto the
    GPU thread axis named by `thread` (e.g. `"threadIdx.x"`); `mma` one of
    the three loops of a matrix band (rows, columns, the reduction, directly
    nested, each a multiple of 16: `tl::matchMatrixBand`), which one
    subgroup of a GPU runs on its matrix units (tensor cores); `library` one
    of the three loops of a matrix band at the top of a function (its rows
    may run to any bound) that the target's GEMM library computes (cuBLAS:
    `tl.library_gemm` on the host). Bounds are index
    values and may depend on enclosing loop variables (triangular loops).

    ```mlir
    tl.for %i = %c0 to %n step %c1 kind(parallel) {
      ...
    }
    ```
  }];
  let arguments = (ins Index:$lowerBound, Index:$upperBound, Index:$step,
                       TL_LoopKindAttr:$kind, OptionalAttr<StrAttr>:$thread);
  let results = (outs);
  let regions = (region SizedRegion<1>:$region);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "mlir::Value":$lowerBound, "mlir::Value":$upperBound,
                   "mlir::Value":$step, "LoopKind":$kind,
                   CArg<"llvm::function_ref<void(mlir::OpBuilder &, mlir::Location, mlir::Value)>",
                        "nullptr">:$bodyBuilder)>
  ];
  let extraClassDeclaration = [{
    /// The induction variable.
    mlir::Value getInductionVar() { return getBody()->getArgument(0); }
    mlir::Block *getBody() { return &getRegion().front(); }
  }];
}

def TL_BlockOp : TL_Op<"block", [AffineScope, RecursiveMemoryEffects,
                                 SingleBlockImplicitTerminator<"YieldOp">,
                                 AttrSizedOperandSegments]> {
  let summary = "a unit of computation with declared iteration space and regions";
  let description = [{
    A TIR-style block. Its iteration variables are bound to index values
    (usually enclosing loop variables) and are either `spatial` (each value
    produces a distinct output) or `reduce` (values are combined into the same
    output). `reads` and `writes` declare, per buffer, the element accessed by
    one block instance as an affine function of the iteration variables; a
    buffer may appear several times with different maps. The body accesses
    buffers only through `affine.load`/`affine.store` whose indices are the
    iteration variables, and every access must match a declared region.
    The optional `init` region runs before the first reduction step, i.e. for
    the instances whose reduction variables are all zero.

    ```mlir
    tl.block "matmul" (%vi = spatial %i, %vj = spatial %j, %vk = reduce %k)
        reads(%A[%vi, %vk] : memref<?x64xf32>, %B[%vj, %vk] : memref<32x64xf32>)
        writes(%C[%vi, %vj] : memref<?x32xf32>)
    init {
      %zero = arith.constant 0.0 : f32
      affine.store %zero, %C[%vi, %vj] : memref<?x32xf32>
    } {
      %a = affine.load %A[%vi, %vk] : memref<?x64xf32>
      %b = affine.load %B[%vj, %vk] : memref<32x64xf32>
      %c = affine.load %C[%vi, %vj] : memref<?x32xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %c, %p : f32
      affine.store %s, %C[%vi, %vj] : memref<?x32xf32>
    }
    ```
    In the `init` region the iteration variables carry the same names as in
    the body.
  }];
  let arguments = (ins StrAttr:$name, Variadic<Index>:$iterValues,
                       TL_IterKindArrayAttr:$iterKinds,
                       Variadic<AnyMemRef>:$reads, AffineMapArrayAttr:$readMaps,
                       Variadic<AnyMemRef>:$writes, AffineMapArrayAttr:$writeMaps);
  let results = (outs);
  let regions = (region AnyRegion:$init, SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  // Buffers that reach the block through a memref.cast to a less static
  // type are used directly (as the accesses in its regions fold them).
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// The number of iteration variables.
    unsigned getNumIters() { return getIterValues().size(); }
    mlir::Block *getBodyBlock() { return &getBody().front(); }
    /// The init block, or null when the block has no init.
    mlir::Block *getInitBlock() {
      return getInit().empty() ? nullptr : &getInit().front();
    }
    /// The kind of iteration variable `i`.
    IterKind getIterKind(unsigned i);
    /// True when some iteration variable is a reduction variable.
    bool hasReduction();
  }];
}


def TL_LibraryGemmOp : TL_Op<"library_gemm"> {
  let summary = "a matrix product the target's GEMM library computes";
  let description = [{
    `out[m, n] = alpha * sum_k a[m, k] * b[n, k] + beta * out[m, n]`, every
    operand a row-major matrix (unit stride along a row, any stride between
    rows), `a` and `b` f16 and `out` f32, the products and sums in f32
    (cuBLAS's `cublasGemmEx`, compute type 32F). `beta` is 0 (the sums start
    at zero) or 1 (they start at out's values); with `init` they start at
    init's values (the same shape; copied into `out` first). A host
    operation of a GPU target: `convert-tl-to-gpu` writes it for a matrix
    band of kind `library`, the kernel ABI turns it into a `gemm` step of
    the dispatch program (docs/artifact.md).

    ```mlir
    tl.library_gemm %out = %a * %b {alpha = 1.0 : f64, beta = 0.0 : f64}
        : memref<?x1024xf16, strided<[1024, 1], offset: ?>>,
          memref<2048x1024xf16, strided<[1024, 1], offset: ?>>
          -> memref<?x2048xf32, strided<[2048, 1], offset: ?>>
    ```
  }];
  let arguments = (ins Arg<AnyMemRef, "rows x k", [MemRead]>:$a,
                       Arg<AnyMemRef, "columns x k", [MemRead]>:$b,
                       Arg<AnyMemRef, "rows x columns", [MemRead, MemWrite]>:$out,
                       Arg<Optional<AnyMemRef>, "rows x columns", [MemRead]>:$init,
                       F64Attr:$alpha, F64Attr:$beta);
  let assemblyFormat = [{
    $out `=` $a `*` $b (`init` `(` $init^ `:` type($init) `)`)? attr-dict
    `:` type($a) `,` type($b) `->` type($out)
  }];
  let hasVerifier = 1;
}

def TL_PrefetchOp : TL_Op<"prefetch"> {
  let summary = "fetch bytes of a buffer into the cache ahead of their use";
  let description = [{
    A hint with no effect on values: the cache lines of bytes
    `[o + distance, o + distance + bytes)` of `buffer`'s contiguous storage
    are fetched into cache level `level` (1: L1, 2: L2, 3: the last level),
    `o` being the byte offset of element `offset` (row-major, the buffer's
    elements counted from its first), one request per `line` bytes.
    Requests past the buffer's end fetch its last line instead. A schedule
    places it in a loop that streams a buffer too big to stay in the cache
    (tl-default-schedule's prefetch rule), the distance and the level
    chosen by the target (`prefetch=`, `prefetch_level=`): the memory's
    latency times its rate, so that the bytes arrive as the loop reaches
    them, into the level whose miss queue holds that many lines in flight.

    ```mlir
    tl.prefetch %w[%off] {distance = 8192 : i64, bytes = 2304 : i64, level = 2 : i64, line = 64 : i64} : memref<48x6912xi8>
    ```
  }];
  let arguments = (ins AnyMemRef:$buffer, Index:$offset, I64Attr:$distance,
                       I64Attr:$bytes, I64Attr:$line, I64Attr:$level);
  let assemblyFormat = "$buffer `[` $offset `]` attr-dict `:` type($buffer)";
  let hasVerifier = 1;
}

#endif // LLMC_DIALECT_TL_TLOPS_TD
