//===- GraphDialect.td - the graph dialect -----------------*- tablegen -*-===//
//
// Tensor-level ops of decoder-only language models.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECT_GRAPH_GRAPHDIALECT_TD
#define LLMC_DIALECT_GRAPH_GRAPHDIALECT_TD

include "mlir/IR/OpBase.td"

def Graph_Dialect : Dialect {
  let name = "graph";
  let cppNamespace = "::llmc::graph";
  let summary = "Tensor ops of decoder LLMs with symbolic sequence length";
  let description = [{
    The `graph` dialect describes a decoder-only transformer as a dataflow graph
    of ranked tensors. The sequence dimension is dynamic (`?`), so one function
    serves prefill (many tokens) and decode (one token). Weights are never IR
    constants: `graph.param` names an external tensor inside the opaque
    `!graph.weights` blob, and the KV cache is the stateful `!graph.kv_cache`
    value that `graph.attention` reads and writes.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 0;
}

class Graph_Op<string mnemonic, list<Trait> traits = []>
    : Op<Graph_Dialect, mnemonic, traits>;

#endif // LLMC_DIALECT_GRAPH_GRAPHDIALECT_TD
