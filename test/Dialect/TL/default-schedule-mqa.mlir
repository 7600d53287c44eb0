// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4" | FileCheck %s
// RUN: llm-opt %s -convert-graph-to-tl -canonicalize -tl-default-schedule="target=cpu:znver4,cores=4" | FileCheck %s --check-prefix=CORES4

!cache = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 1, head_dim = 64, element_type = f32>

// MQA (4 query heads, one KV head): no KV heads to put on the threads. The
// group's heads go into register tiles (they share each load of the keys
// and values), so the threads take what the scheduled nests leave: q.k's
// positions and p.V's outputs. Never a parallel loop inside the positions
// (p.V's tail once ran a parallel region per position, over the heads).
// CHECK-LABEL: func.func @decode_mqa
// CHECK: tl.for %[[T:.+]] = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: tl.block "attention_scores_rf" ({{.*}} = spatial %[[T]],
// CHECK: tl.for %[[D:.+]] = %{{.+}} to %c64 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: tl.block "attention_values_rf" ({{.*}} = spatial %[[D]],
// CHECK: tl.block "attention_values_tail"
// CHECK-NOT: kind(parallel)
// CHECK: return
func.func @decode_mqa(%q: tensor<1x256xf32>, %k: tensor<1x64xf32>, %c: !cache, %p: index) -> tensor<1x256xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, scale = 0.25 : f32} : tensor<1x256xf32>, tensor<1x64xf32>, tensor<1x64xf32>, !cache
  return %0 : tensor<1x256xf32>
}

// A prompt with one KV head: the token loop shares each head's scores row
// between its tokens and cannot take the threads; each block's loop over
// the 12 query heads fuses into one (fuseSiblings), which goes outermost,
// on the threads, the tokens inside it.
// CHECK-LABEL: func.func @prefill_mqa
// CHECK: tl.for %[[H:.+]] = %{{.+}} to %c12 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK-NEXT: tl.for %[[S:.+]] = %{{.+}} to %dim step
// CHECK: tl.block "attention_scores_rf" (%{{.+}} = spatial %[[S]], %{{.+}} = spatial %c0, %{{.+}} = spatial %[[H]],
// CHECK: tl.block "attention_values
// CHECK-NOT: tl.for %{{.+}} = %{{.+}} to %c12
// CHECK: return
!cache12 = !graph.kv_cache<layers = 2, max_seq = 2048, kv_heads = 1, head_dim = 64, element_type = f32>
func.func @prefill_mqa(%q: tensor<?x768xf32>, %k: tensor<?x64xf32>, %c: !cache12, %p: index) -> tensor<?x768xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 12 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, scale = 0.125 : f32} : tensor<?x768xf32>, tensor<?x64xf32>, tensor<?x64xf32>, !cache12
  return %0 : tensor<?x768xf32>
}

// Flash attention (kv_tile) in MQA's decode: the loop over the tiles of
// positions carries each row's max, sum and output through a sequence of
// nests, and cannot take the threads; each of its nests gets them (q.k's
// positions, p.V's outputs), a parallel region per tile and step.
// CHECK-LABEL: func.func @decode_mqa_online
// CHECK: tl.for %[[T0:.+]] = %{{.+}} to %{{.+}} step %c256 {
// CHECK-NEXT: arith.subi
// CHECK: tl.for %[[X:.+]] = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: tl.block "attention_scores_rf" ({{.*}} = spatial %[[T0]], {{.*}} = spatial %[[X]],
// CHECK: tl.for %[[D:.+]] = %{{.+}} to %c64 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: tl.block "attention_values_rf" ({{.*}} = spatial %[[D]],
// CHECK: tl.block "attention_normalize"
func.func @decode_mqa_online(%q: tensor<1x256xf32>, %k: tensor<1x64xf32>, %c: !cache, %p: index) -> tensor<1x256xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, scale = 0.25 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<1x256xf32>, tensor<1x64xf32>, tensor<1x64xf32>, !cache
  return %0 : tensor<1x256xf32>
}

// A prompt with one KV head and flash attention: inside the loop over the
// tiles the blocks' loops over the 12 heads fuse into one, which moves out
// of the tiles' loop (each head's tiles in turn) and fuses with the row's
// other loops over the heads; that one goes outermost, on the threads.
// CHECK-LABEL: func.func @prefill_mqa_online
// CHECK: tl.for %[[H:.+]] = %{{.+}} to %c12 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK-NEXT: tl.for %[[S:.+]] = %{{.+}} to %dim step
// CHECK: tl.block "attention_init" ({{.*}} = spatial %[[H]], {{.*}} = spatial %c0{{[_0-9]*}})
// CHECK: tl.for %[[T0:.+]] = %{{.+}} to %{{.+}} step %c256 {
// CHECK: tl.block "attention_scores_rf" (%{{.+}} = spatial %[[S]], %{{.+}} = spatial %c0{{[_0-9]*}}, %{{.+}} = spatial %[[H]], %{{.+}} = spatial %c0{{[_0-9]*}}, %{{.+}} = spatial %[[T0]],
// CHECK: tl.block "attention_values
// CHECK: tl.block "attention_normalize"
// CHECK-NOT: tl.for %{{.+}} = %{{.+}} to %c12
// CHECK-NOT: kind(parallel)
// CHECK: return
func.func @prefill_mqa_online(%q: tensor<?x768xf32>, %k: tensor<?x64xf32>, %c: !cache12, %p: index) -> tensor<?x768xf32> attributes {llmc.phase = "prefill"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 12 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, scale = 0.125 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64} : tensor<?x768xf32>, tensor<?x64xf32>, tensor<?x64xf32>, !cache12
  return %0 : tensor<?x768xf32>
}

// Split over the positions (kv_splits = 2): in decode the parts' loop has
// an iteration per part, each with its own state: independent, so it takes
// the threads (one parallel region per layer, each thread a share of the
// context); the merge after it runs once.
// CHECK-LABEL: func.func @decode_mqa_split
// CHECK: tl.for %[[P:.+]] = %{{.+}} to %c2 step %{{[a-z0-9_]+}} kind(parallel)
// CHECK: tl.block "attention_scores_rf" ({{.*}} = spatial %[[P]],
// CHECK: tl.block "attention_values_rf" ({{.*}} = spatial %[[P]],
// CHECK: tl.block "attention_merge_out"
// CHECK-NOT: kind(parallel)
// CHECK: return
func.func @decode_mqa_split(%q: tensor<1x256xf32>, %k: tensor<1x64xf32>, %c: !cache, %p: index) -> tensor<1x256xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 4 : i64, num_kv_heads = 1 : i64, head_dim = 64 : i64, scale = 0.25 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64, kv_splits = 2 : i64} : tensor<1x256xf32>, tensor<1x64xf32>, tensor<1x64xf32>, !cache
  return %0 : tensor<1x256xf32>
}

// GQA on 4 cores with 3 KV heads (kv_splits = 4): the KV heads cannot
// fill the cores, so the loop over them is distributed over its body and
// the parts' loop moved outside its first copy: the threads take the 4
// parts, each every KV head's share of the positions; the merge's nests,
// over the KV heads again, fuse into one loop (a nest of its own, whose
// heads take the threads).
// CORES4-LABEL: func.func @decode_gqa_split
// CORES4: tl.for %[[P:.+]] = %{{.+}} to %c4 step %{{[a-z0-9_]+}} kind(parallel)
// CORES4-NEXT: tl.for %[[KV:.+]] = %{{.+}} to %c3 step %{{[a-z0-9_]+}} {
// CORES4: tl.block "attention_values_rf" ({{.*}} = spatial %[[KV]], {{.*}} = spatial %[[P]],
// CORES4: tl.for %[[KM:.+]] = %{{.+}} to %c3 step %{{[a-z0-9_]+}} kind(parallel)
// CORES4: tl.block "attention_merge_max" ({{.*}} = spatial %[[KM]],
// CORES4-NOT: tl.for %{{.+}} = %{{.+}} to %c3
// CORES4: tl.block "attention_normalize" ({{.*}} = spatial %[[KM]],
// CORES4: return
!cache3 = !graph.kv_cache<layers = 2, max_seq = 256, kv_heads = 3, head_dim = 64, element_type = f32>
func.func @decode_gqa_split(%q: tensor<1x384xf32>, %k: tensor<1x192xf32>, %c: !cache3, %p: index) -> tensor<1x384xf32> attributes {llmc.phase = "decode"} {
  %0 = graph.attention %q, %k, %k, %c, %p {layer = 1 : i64, num_heads = 6 : i64, num_kv_heads = 3 : i64, head_dim = 64 : i64, scale = 0.25 : f32, kv_pad = 64 : i64, kv_tile = 256 : i64, kv_splits = 4 : i64} : tensor<1x384xf32>, tensor<1x192xf32>, tensor<1x192xf32>, !cache3
  return %0 : tensor<1x384xf32>
}
