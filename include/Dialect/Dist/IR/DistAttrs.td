//===- DistAttrs.td - dist dialect attributes --------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_DIST_DISTATTRS_TD
#define LLMC_DIALECT_DIST_DISTATTRS_TD

include "Dialect/Dist/IR/DistDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def Dist_LinkAttr : AttrDef<Dist_Dialect, "Link"> {
  let mnemonic = "link";
  let summary = "the link a mesh axis maps to";
  let description = [{
    What moving data along one mesh axis costs: `bandwidth` in bytes per
    second (each rank's, one direction) and `latency` in seconds per message.
    The cost model charges a collective over the axis with them (a ring:
    `2 (n - 1) / n * bytes / bandwidth + 2 (n - 1) * latency` for an
    all-reduce of n ranks).

    ```mlir
    #dist.link<bandwidth = 2.0e10, latency = 5.0e-06>
    ```
  }];
  let parameters = (ins "::mlir::FloatAttr":$bandwidth,
                        "::mlir::FloatAttr":$latency);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Dist_ShardingAttr : AttrDef<Dist_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "how a tensor lies on a mesh";
  let description = [{
    `dims` holds, for each dimension of the tensor, the list of mesh axes
    that split it (major first: with `["pp", "tp"]` the ranks of `pp` take
    contiguous blocks, each split again over `tp`); an empty list leaves the
    dimension whole on every rank. `partial` lists the axes over which each
    rank holds a partial sum of the value (the output of a product whose
    reduction dimension is split: the value is the sum over those axes'
    ranks). Axes not named are replicated. An axis appears at most once in
    all. `#dist.sharding<@mesh, [[], []]>` is a replicated matrix.

    ```mlir
    // Columns split over tp (Megatron's QKV, gate, up), rows whole:
    #dist.sharding<@mesh, [[], ["tp"]]>
    // A row-split product's output before its all-reduce:
    #dist.sharding<@mesh, [[], []], partial = ["tp"]>
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$dims,
                        OptionalParameter<"::mlir::ArrayAttr">:$partial);
  let assemblyFormat = "`<` $mesh `,` $dims (`,` `partial` `=` $partial^)? `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The mesh axes splitting dimension `dim`.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(unsigned dim) const;
    /// The axes over which the value is a partial sum.
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxes() const;
    /// Whether no dimension is split and nothing is partial.
    bool isReplicated() const;
  }];
}

def Dist_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the ranks' values", [
    I32EnumAttrCase<"sum", 0>,
    I32EnumAttrCase<"max", 1>,
    I32EnumAttrCase<"min", 2>
  ]> {
  let cppNamespace = "::llmc::dist";
  let genSpecializedAttr = 0;
}

def Dist_ReductionKindAttr : EnumAttr<Dist_Dialect, Dist_ReductionKind,
                                      "reduction"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // LLMC_DIALECT_DIST_DISTATTRS_TD
