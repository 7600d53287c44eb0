// REQUIRES: models
// RUN: llm-translate --import %models/stories260K.bin | FileCheck %s
// RUN: llm-translate --import %models/stories260K.bin --max-seq-len 64 | FileCheck %s --check-prefix=SEQ

// The llama2.c header becomes the model description and the cache type.
// CHECK: module attributes {graph.model = {arch = "llama", bos_id = 1 : i64, dim = 64 : i64, eos_ids = [1, 2], head_dim = 8 : i64, hidden_dim = 172 : i64, max_seq_len = 512 : i64, n_heads = 8 : i64, n_kv_heads = 4 : i64, n_layers = 5 : i64
// CHECK: func.func @forward(%{{.*}}: tensor<?xi32>, %{{.*}}: index, %{{.*}}: !graph.weights, %{{.*}}: !graph.kv_cache<layers = 5, max_seq = 512, kv_heads = 4, head_dim = 8, element_type = f32>) -> tensor<?x512xf32>
// SEQ: !graph.kv_cache<layers = 5, max_seq = 64,

// Weights are external: a name, the file and the byte offset, never data.
// CHECK: graph.param %{{.*}}["model.embed_tokens.weight"] {source = #graph.extern<file = "{{.*}}stories260K.bin", offset = 28, dtype = f32>} : tensor<512x64xf32>
// CHECK: graph.param %{{.*}}["model.layers.0.self_attn.k_proj.weight"] {source = #graph.extern<file = "{{.*}}", offset = 214300, dtype = f32>} : tensor<32x64xf32>
// llama2.c rotates interleaved pairs.
// CHECK: graph.rope {{.*}}style = #graph.rope_style<interleaved>
// CHECK: graph.attention {{.*}}{head_dim = 8 : i64, layer = 0 : i64, num_heads = 8 : i64, num_kv_heads = 4 : i64
// The classifier is tied to the embedding.
// CHECK: graph.param %{{.*}}["model.embed_tokens.weight"]
// CHECK-NEXT: graph.matmul {{.*}} -> tensor<?x512xf32>
// CHECK-NEXT: return
