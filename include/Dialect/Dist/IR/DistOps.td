//===- DistOps.td - dist dialect operations ----------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_DIST_DISTOPS_TD
#define LLMC_DIALECT_DIST_DISTOPS_TD

include "Dialect/Dist/IR/DistDialect.td"
include "Dialect/Dist/IR/DistAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Dist_MeshOp : Dist_Op<"mesh", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "a grid of ranks with named axes";
  let description = [{
    A mesh of `shape` ranks (row-major: the last axis varies fastest in the
    rank number), one name per axis. `links`, where given, says for each axis
    what moving data along it costs (#dist.link); without it the cost model
    takes the target's default link. A one-rank mesh makes a model's
    sharding a no-op.

    ```mlir
    dist.mesh @mesh shape [2, 2] axes ["pp", "tp"]
        links [#dist.link<bandwidth = 1.0e10, latency = 2.0e-05>,
               #dist.link<bandwidth = 2.0e11, latency = 5.0e-06>]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       DenseI64ArrayAttr:$shape,
                       StrArrayAttr:$axes,
                       OptionalAttr<TypedArrayAttrBase<Dist_LinkAttr,
                                    "links">>:$links);
  let assemblyFormat = [{
    $sym_name `shape` $shape `axes` $axes (`links` $links^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The position of axis `name`, or -1.
    int64_t getAxisIndex(::llvm::StringRef name);
    /// The ranks along axis `name` (1 for an unknown axis).
    int64_t getAxisSize(::llvm::StringRef name);
    /// The ranks of a group spanning `axes` (the product of their sizes).
    int64_t getGroupSize(::mlir::ArrayAttr axes);
    int64_t getGroupSize(::llvm::ArrayRef<::llvm::StringRef> axes);
    /// All ranks of the mesh.
    int64_t getNumRanks();
  }];
}

def Dist_ShardOp : Dist_Op<"shard", [
    Pure, AllTypesMatch<["input", "result"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "pins a value's sharding";
  let description = [{
    The result is `input`, laid out on the mesh as `sharding` says: an
    annotation that sharding propagation starts from and never overrides
    (a user's plan, or the automatic plan's choice for a weight). The
    sharding must name the tensor's rank of dimensions and axes of its
    mesh, each at most once; a split static dimension must divide evenly
    over the ranks of its axes.

    ```mlir
    %wq = dist.shard %w to <@mesh, [["tp"], []]> : tensor<1024x1024xf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Dist_ShardingAttr:$sharding);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `to` $sharding attr-dict `:` type($result)";
}

/// A collective among the ranks of the groups spanned by `axes` of `mesh`:
/// the ranks whose positions differ only along those axes.
class Dist_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Dist_Op<mnemonic, !listconcat(traits, [
          DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  code commonDescription = [{
    A collective runs on every rank of the mesh (each rank's program has it
    at the same point): each group of ranks that differ only along `axes`
    exchanges its local tensors. It is never removed or reordered (a rank
    that skipped or reordered one would hang its group), hence its effects.
  }];
}

def Dist_AllReduceOp : Dist_CollectiveOp<"all_reduce",
                                         [SameOperandsAndResultType]> {
  let summary = "every rank of a group gets the combination of its values";
  let description = [{
    Each rank's result is the elementwise `reduction` (sum by default) of
    `input` over its group: a partial sum made whole (Megatron's row-split
    products, O and down).

    ```mlir
    %y = dist.all_reduce %p on @mesh axes ["tp"] : tensor<?x1024xf32>
    %m = dist.all_reduce %q on @mesh axes ["tp"] reduction <max> : tensor<?x1xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes,
                       DefaultValuedAttr<Dist_ReductionKindAttr,
                                         "::llmc::dist::ReductionKind::sum">:$reduction);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes (`reduction` $reduction^)? attr-dict
    `:` type($result)
  }];
}

def Dist_AllGatherOp : Dist_CollectiveOp<"all_gather"> {
  let summary = "every rank of a group gets all of its pieces, concatenated";
  let description = [{
    The result is the group's `input`s concatenated along `gather_axis` in
    the order of the ranks' positions along `axes` (major first): that
    dimension is the group's size times the input's, the others the same.
    (The vocabulary-parallel head's logits, gathered for sampling.)

    ```mlir
    %l = dist.all_gather %p on @mesh axes ["tp"] gather_axis = 1
        : tensor<?x75968xf32> -> tensor<?x151936xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$gather_axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `gather_axis` `=` $gather_axis attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Dist_ReduceScatterOp : Dist_CollectiveOp<"reduce_scatter"> {
  let summary = "combines a group's values and leaves each rank one piece";
  let description = [{
    The group's `input`s combined elementwise by `reduction` (sum by
    default), split along `scatter_axis` into as many pieces as the group
    has ranks, each rank keeping the piece at its position: that dimension
    of the result is the input's divided by the group's size.

    ```mlir
    %s = dist.reduce_scatter %p on @mesh axes ["tp"] scatter_axis = 1
        : tensor<8x1024xf32> -> tensor<8x512xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$scatter_axis,
                       DefaultValuedAttr<Dist_ReductionKindAttr,
                                         "::llmc::dist::ReductionKind::sum">:$reduction);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `scatter_axis` `=` $scatter_axis
    (`reduction` $reduction^)? attr-dict `:` type($input) `->` type($result)
  }];
}

def Dist_AllToAllOp : Dist_CollectiveOp<"all_to_all"> {
  let summary = "each rank sends a piece to every rank of its group";
  let description = [{
    Each rank splits `input` along `split_axis` into as many pieces as its
    group has ranks and sends piece i to the group's rank i; the result is
    the pieces received, concatenated along `concat_axis` in the ranks'
    order: `split_axis` divided by the group's size, `concat_axis`
    multiplied by it (a sharding moved from one dimension to another).

    ```mlir
    %t = dist.all_to_all %x on @mesh axes ["tp"] split_axis = 1 concat_axis = 0
        : tensor<4x16xf32> -> tensor<8x8xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_axis,
                       I64Attr:$concat_axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `split_axis` `=` $split_axis
    `concat_axis` `=` $concat_axis attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Dist_SendOp : Dist_CollectiveOp<"send"> {
  let summary = "sends a tensor to one rank of the group";
  let description = [{
    Sends `input` to the rank of this rank's group at position `peer` along
    `axes` (one index per axis), which must run the matching `dist.recv`
    (a pipeline stage handing its activations to the next).

    ```mlir
    dist.send %h on @mesh axes ["pp"] to [1] : tensor<?x1024xf32>
    ```
  }] # commonDescription;
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, DenseI64ArrayAttr:$peer);
  let assemblyFormat = [{
    $input `on` $mesh `axes` $axes `to` $peer attr-dict `:` type($input)
  }];
}

def Dist_RecvOp : Dist_CollectiveOp<"recv"> {
  let summary = "receives a tensor from one rank of the group";
  let description = [{
    Receives the tensor that the rank of this rank's group at position
    `peer` along `axes` sends with the matching `dist.send`. A dynamic
    dimension's size is `sizes`' operand for it, in order (the prompt's
    length, which every stage knows).

    ```mlir
    %h = dist.recv on @mesh axes ["pp"] from [0] sizes(%n) : tensor<?x1024xf32>
    ```
  }] # commonDescription;
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$peer, Variadic<Index>:$sizes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    `on` $mesh `axes` $axes `from` $peer (`sizes` `(` $sizes^ `)`)? attr-dict
    `:` type($result)
  }];
}

def Dist_AxisIndexOp : Dist_Op<"axis_index", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this rank's position along mesh axes";
  let description = [{
    The position of the running rank in its group along `axes` (major
    first: for axes `[a, b]`, `pos(a) * size(b) + pos(b)`). A partitioned
    program is one program for every rank of the mesh; what differs between
    ranks (the rows of a vocabulary-parallel table a rank holds) is computed
    from this.

    ```mlir
    %r = dist.axis_index on @mesh axes ["tp"] : index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes);
  let results = (outs Index:$result);
  let assemblyFormat = "`on` $mesh `axes` $axes attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Buffer forms (after bufferization: convert-graph-to-tl)
//===----------------------------------------------------------------------===//

def Dist_BufferAllReduceOp : Dist_CollectiveOp<"buffer_all_reduce"> {
  let summary = "all_reduce of a buffer, in place";
  let description = [{
    The buffer form of `dist.all_reduce`: `buffer` (dense, row-major) is
    replaced on every rank by the elementwise `reduction` of the group's
    buffers. A back end lowers it to a call into the runtime's collectives.

    ```mlir
    dist.buffer_all_reduce %b on @mesh axes ["tp"] : memref<?x64xf32>
    ```
  }] # commonDescription;
  let arguments = (ins Arg<AnyMemRef, "", [MemRead, MemWrite]>:$buffer,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       DefaultValuedAttr<Dist_ReductionKindAttr,
                                         "::llmc::dist::ReductionKind::sum">:$reduction);
  let assemblyFormat = [{
    $buffer `on` $mesh `axes` $axes (`reduction` $reduction^)? attr-dict
    `:` type($buffer)
  }];
}

def Dist_BufferAllGatherOp : Dist_CollectiveOp<"buffer_all_gather"> {
  let summary = "all_gather of a buffer into another";
  let description = [{
    The buffer form of `dist.all_gather`: `output` receives the group's
    `input`s (dense, row-major) concatenated along `gather_axis`.

    ```mlir
    dist.buffer_all_gather %p into %l on @mesh axes ["tp"] gather_axis = 1
        : memref<?x16xf32>, memref<?x32xf32>
    ```
  }] # commonDescription;
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$input,
                       Arg<AnyMemRef, "", [MemWrite]>:$output,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       I64Attr:$gather_axis);
  let assemblyFormat = [{
    $input `into` $output `on` $mesh `axes` $axes `gather_axis` `=`
    $gather_axis attr-dict `:` type($input) `,` type($output)
  }];
}

// (Its write: the message leaves; an op that only reads would be dead.)
def Dist_BufferSendOp : Dist_CollectiveOp<"buffer_send",
                                          [MemoryEffects<[MemWrite]>]> {
  let summary = "send of a buffer";
  let description = [{
    The buffer form of `dist.send`: `buffer` (dense, row-major) goes to the
    rank of the group at position `peer` along `axes`.

    ```mlir
    dist.buffer_send %h on @mesh axes ["pp"] to [1] : memref<?x64xf32>
    ```
  }] # commonDescription;
  let arguments = (ins Arg<AnyMemRef, "", [MemRead]>:$buffer,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$peer);
  let assemblyFormat = [{
    $buffer `on` $mesh `axes` $axes `to` $peer attr-dict `:` type($buffer)
  }];
}

def Dist_BufferRecvOp : Dist_CollectiveOp<"buffer_recv"> {
  let summary = "receive into a buffer";
  let description = [{
    The buffer form of `dist.recv`: `buffer` (dense, row-major) receives
    what the rank of the group at position `peer` along `axes` sends.

    ```mlir
    dist.buffer_recv %h on @mesh axes ["pp"] from [0] : memref<?x64xf32>
    ```
  }] # commonDescription;
  let arguments = (ins Arg<AnyMemRef, "", [MemWrite]>:$buffer,
                       FlatSymbolRefAttr:$mesh, StrArrayAttr:$axes,
                       DenseI64ArrayAttr:$peer);
  let assemblyFormat = [{
    $buffer `on` $mesh `axes` $axes `from` $peer attr-dict `:` type($buffer)
  }];
}

#endif // LLMC_DIALECT_DIST_DISTOPS_TD
