// RUN: llm-opt %s --compile-to=graph | FileCheck %s --check-prefix=GRAPH
// RUN: llm-opt %s --compile-to=tl | FileCheck %s --check-prefix=TL
// RUN: llm-opt %s --compile-to=llvm | FileCheck %s --check-prefix=LLVM
// RUN: llm-opt %s --compile-to=llvm | FileCheck %s --check-prefix=NOALLOC
// RUN: llm-opt %s --compile-to=llvm | llm-translate --mlir-to-llvmir - | FileCheck %s --check-prefix=IR
// RUN: not llm-opt %s --compile-to=bogus 2>&1 | FileCheck %s --check-prefix=BAD

!cache = !graph.kv_cache<layers = 1, max_seq = 8, kv_heads = 1, head_dim = 4, element_type = f32>

// graph: weights laid out, duplicate params merged; the entry returns the
// last n_out rows (llmc/abi.h), the head computing only those.
// GRAPH: module attributes {graph.weights_bytes = 192 : i64}
// GRAPH: func.func @forward({{.*}}, %[[NOUT:.+]]: index {llmc.output_rows})
// GRAPH-COUNT-2: graph.param
// GRAPH: graph.last_rows %{{.*}}, %[[NOUT]]
// GRAPH-NEXT: graph.matmul
// GRAPH-NOT: graph.param

// tl: buffers, the out-parameter ABI (llmc/abi.h's KV layout: layer, k|v,
// KV head, positions x head_dim), no graph ops left; the entry dispatches
// one token to the decode version and more to the prefill one; buffers are
// released later (after scheduling), in the llvm phase.
// TL-LABEL: func.func @forward
// TL-SAME: (%{{.*}}: memref<?xi32>, %{{.*}}: index, %{{.*}}: memref<?xi8>, %{{.*}}: memref<1x2x1x32xf32>, %{{.*}}: index {llmc.output_rows}, %[[OUT:.+]]: memref<?x6xf32>)
// TL-SAME: attributes {llvm.emit_c_interface}
// TL: call @forward_decode
// TL: call @forward_prefill
// TL-NOT: graph.
// TL: func.func private @forward_prefill({{.*}}) attributes {llmc.phase = "prefill"}
// TL: tl.block "embedding"
// TL: tl.block "matmul"
// TL-NOT: memref.dealloc
// TL: func.func private @forward_decode({{.*}}) attributes {llmc.phase = "decode"}
// TL: tl.block "embedding"
// TL: tl.block "matmul"
// TL-NOT: memref.dealloc
// TL: return
// TL-NEXT: }

// llvm: only the LLVM dialect is left, with the C entry point.
// LLVM-NOT: tl.
// LLVM-NOT: memref.
// LLVM: llvm.func @forward(
// The intermediates live in the caller's arena (tl-plan-arena), the last
// argument: nothing is allocated or freed.
// NOALLOC: module
// NOALLOC-NOT: @malloc
// NOALLOC-NOT: @free
// LLVM: llvm.func @_mlir_ciface_forward(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64 {llmc.output_rows}, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llmc.arena})
// LLVM-SAME: llmc.arena =
// LLVM: llvm.func @forward_prefill(

// IR: define void @_mlir_ciface_forward(ptr %0, i64 %1, ptr %2, ptr %3, i64 %4, ptr %5, ptr %6)

// BAD: llm-opt: error: unknown phase 'bogus' for --compile-to (expected graph, tl or llvm)

func.func @forward(%tokens: tensor<?xi32>, %pos0: index, %w: !graph.weights, %cache: !cache) -> tensor<?x6xf32> {
  %emb = graph.param %w["emb"] : tensor<6x4xf32>
  %x = graph.embedding %emb[%tokens] : tensor<6x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %g = graph.param %w["g"] : tensor<4xf32>
  %h = graph.rms_norm %x, %g {eps = 1.0e-5 : f32} : tensor<?x4xf32>, tensor<4xf32>
  %a = graph.attention %h, %h, %h, %cache, %pos0 {layer = 0 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, scale = 0.5 : f32} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, !cache
  %emb2 = graph.param %w["emb"] : tensor<6x4xf32>
  %logits = graph.matmul %a, %emb2 : tensor<?x4xf32>, tensor<6x4xf32> -> tensor<?x6xf32>
  return %logits : tensor<?x6xf32>
}
