//===- TLDialect.td - the tensor-loop dialect --------------*- tablegen -*-===//
#ifndef LLMC_DIALECT_TL_TLDIALECT_TD
#define LLMC_DIALECT_TL_TLDIALECT_TD

include "mlir/IR/OpBase.td"

def TL_Dialect : Dialect {
  let name = "tl";
  let cppNamespace = "::llmc::tl";
  let summary = "Loop nests of blocks over buffers, in the style of TVM's TIR";
  let description = [{
    `tl` is where kernels are scheduled. A kernel is a function over memrefs
    whose body is a tree of `tl.for` loops; each loop carries its kind
    (serial, parallel, vectorized, unrolled, or bound to a GPU thread axis).
    Computation sits in `tl.block`s, whose iteration variables are spatial or
    reduction variables bound to loop values, whose read and write regions
    are declared as affine maps of those variables, and whose optional `init`
    region initialises a reduction. Schedule primitives rewrite the loops
    around blocks; the blocks' declared regions are what lets them check
    their preconditions.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class TL_Op<string mnemonic, list<Trait> traits = []>
    : Op<TL_Dialect, mnemonic, traits>;

#endif // LLMC_DIALECT_TL_TLDIALECT_TD
