// RUN: llm-opt %s --pass-pipeline='builtin.module(llmc-compile{to=graph})' | FileCheck %s --check-prefix=GRAPH
// RUN: llm-opt %s --pass-pipeline='builtin.module(llmc-graph,llmc-tl{schedule=none target=cpu:x86-64-v3})' | FileCheck %s --check-prefix=TL
// RUN: not llm-opt %s --pass-pipeline='builtin.module(llmc-compile{to=bogus})' 2>&1 | FileCheck %s --check-prefix=PHASE
// RUN: not llm-opt %s --pass-pipeline='builtin.module(llmc-tl{schedule=bogus})' 2>&1 | FileCheck %s --check-prefix=SCHED
// RUN: not llm-opt %s --pass-pipeline='builtin.module(llmc-graph{act-quant=int4})' 2>&1 | FileCheck %s --check-prefix=ACT
// RUN: not llm-opt %s --pass-pipeline='builtin.module(llmc-compile{target=tpu})' 2>&1 | FileCheck %s --check-prefix=TARGET

// The registered pipelines run the phases llmc compile runs, with the same
// options; options that do not hold are errors naming the pipeline.
// GRAPH: graph.last_rows
// GRAPH: graph.matmul
// TL: func.func private @forward_prefill
// TL-NOT: parallel
// TL: tl.block "matmul"
// PHASE: error: llmc-compile: unknown phase 'bogus' (expected graph, tl or llvm)
// SCHED: error: llmc-tl: schedule: expected default or none, got 'bogus'
// ACT: error: llmc-graph: act-quant: expected exact or llama.cpp, got 'int4'
// TARGET: error: llmc-compile: unknown target 'tpu'

func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights) -> tensor<?x6xf32> {
  %emb = graph.param %w["emb"] : tensor<6x4xf32>
  %x = graph.embedding %emb[%tokens] : tensor<6x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %logits = graph.matmul %x, %emb : tensor<?x4xf32>, tensor<6x4xf32> -> tensor<?x6xf32>
  return %logits : tensor<?x6xf32>
}
