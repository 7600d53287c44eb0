// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=vulkan:1.3,subgroup=32" | FileCheck %s
// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=vulkan:1.3,subgroup=128,workgroup=512" | FileCheck %s --check-prefix=WIDE
// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=vulkan:1.3,subgroup=1" | FileCheck %s --check-prefix=TREE
// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=vulkan:1.3,subgroup=32,shared=128" | FileCheck %s --check-prefix=SMALL
// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=vulkan:1.3,subgroup=32,device=cpu" | FileCheck %s --check-prefix=CPUDEV

// The GPU targets' default schedule: each nest one launch, its independent
// top loops on the grid (the innermost split into workgroups x threads,
// the others on blockIdx.y/z), the rest serial in each thread; a
// reduction with a constant number of outputs split across a workgroup.

// A decode matmul (64 outputs, 256 products each): a workgroup per output
// (blockIdx.x), its 64 threads taking consecutive products (k = ko * 64 +
// lane: coalesced), each summing them in a register (rfactor over a lane
// of one: a buffer of its own, the loop over it unrolled) and adding that
// into its partial in the workgroup's buffer once. With
// subgroups of 32, each subgroup sums its lanes' partials at once
// (gpu.subgroup_reduce, every lane of the workgroup in the step) and one
// thread adds the two subgroups' totals into the output. Every step a loop
// bound to threadIdx.x.
// CHECK-LABEL: func.func @decode
// CHECK: tl.for %[[N:.*]] = %c0 to %c64 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK: %[[P:.*]] = memref.alloca() {{.*}} : memref<64xf32>
// CHECK: tl.for {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "matmul_rf_init"
// CHECK: tl.for %[[L:.*]] = {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: %[[R:.*]] = memref.alloca() {{.*}} : memref<1xf32>
// CHECK: tl.block "matmul_rf_rf_init"
// CHECK: tl.for %[[KO:.*]] = {{.*}} to %c4
// CHECK: tl.for {{.*}} to %c1{{.*}} kind(unrolled)
// CHECK: tl.block "matmul_rf_rf"
// CHECK: affine.store %{{.*}}, %[[R]]
// CHECK: tl.block "matmul_rf" ({{.*}}%[[L]], {{.*}}) reads(%[[P]]{{.*}}, %[[R]]
// CHECK: tl.for {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "matmul_subgroup"
// CHECK: gpu.subgroup_reduce add %{{.*}} : (f32) -> f32
// CHECK-NOT: matmul_tree
// CHECK: tl.for {{.*}} to %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for %[[S:.*]] = {{.*}} to %c2
// CHECK-NEXT: tl.block "matmul" ({{.*}}) reads({{.*}}%[[P]][%{{.*}} * 32]
// A subgroup of 128 threads: 128 lanes, two products each, so two rows a
// workgroup (each lane four products).
// WIDE-LABEL: func.func @decode
// WIDE: memref.alloca() {{.*}} : memref<2x128xf32>
// WIDE: tl.block "matmul_subgroup"
// Without subgroup operations (subgroups of one), the partials are summed
// in a tree in workgroup memory: 32, 16, ... 1 threads, then the output by
// one thread.
// With 128 bytes of workgroup memory, 64 partials do not fit: one output a
// thread, the products serial.
// SMALL-LABEL: func.func @decode
// SMALL-NOT: memref.alloca
// SMALL: tl.for {{.*}} to %c64 step %c1 kind(thread_bound) thread("threadIdx.x")
// SMALL-NEXT: tl.for {{.*}} to %c256 step %c1 {
// SMALL-LABEL: func.func @add
// TREE-LABEL: func.func @decode
// TREE: tl.for {{.*}} to %c32{{.*}} kind(thread_bound) thread("threadIdx.x")
// TREE-NEXT: tl.block "matmul_tree0"
// TREE: tl.block "matmul_tree5"
// TREE: tl.for {{.*}} to %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// TREE-NEXT: tl.block "matmul" ({{.*}}) reads({{.*}}[0]
func.func @decode(%x: memref<1x256xf32>, %w: memref<64x256xf32>, %y: memref<1x64xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c64 = arith.constant 64 : index
  tl.for %n = %c0 to %c64 step %c1 {
    tl.for %k = %c0 to %c256 step %c1 {
      tl.block "matmul" (%t = spatial %c0, %r = spatial %n, %kk = reduce %k) reads(%x[%t, %kk] : memref<1x256xf32>, %w[%r, %kk] : memref<64x256xf32>, %y[%t, %r] : memref<1x64xf32>) writes(%y[%t, %r] : memref<1x64xf32>) init {
        affine.store %cst, %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
      } {
        %0 = affine.load %x[symbol(%t), symbol(%kk)] : memref<1x256xf32>
        %1 = affine.load %w[symbol(%r), symbol(%kk)] : memref<64x256xf32>
        %2 = affine.load %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 : f32
        affine.store %4, %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
      }
    }
  }
  return
}

// -----

// Tokens (dynamic) and 1000 columns: the tokens on blockIdx.y, the columns
// in workgroups of 64 threads on blockIdx.x, the last one partly idle (its
// threads past the end run nothing: the split's bound).
// CHECK-LABEL: func.func @add
// CHECK: tl.for {{.*}} to %{{.*}} step %c1 kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK: %[[REST:.*]] = arith.minui
// CHECK: tl.for {{.*}} to %[[REST]] {{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "add"
// WIDE-LABEL: func.func @add
// WIDE: tl.for {{.*}} to %c8{{.*}} kind(thread_bound) thread("blockIdx.x")
func.func @add(%a: memref<?x1000xf32>, %b: memref<?x1000xf32>, %c: memref<?x1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1000 = arith.constant 1000 : index
  %n = memref.dim %a, %c0 : memref<?x1000xf32>
  tl.for %i = %c0 to %n step %c1 {
    tl.for %j = %c0 to %c1000 step %c1 {
      tl.block "add" (%ii = spatial %i, %jj = spatial %j) reads(%a[%ii, %jj] : memref<?x1000xf32>, %b[%ii, %jj] : memref<?x1000xf32>) writes(%c[%ii, %jj] : memref<?x1000xf32>) {
        %0 = affine.load %a[symbol(%ii), symbol(%jj)] : memref<?x1000xf32>
        %1 = affine.load %b[symbol(%ii), symbol(%jj)] : memref<?x1000xf32>
        %2 = arith.addf %0, %1 : f32
        affine.store %2, %c[symbol(%ii), symbol(%jj)] : memref<?x1000xf32>
      }
    }
  }
  return
}

// -----

// A reduction at the top (no output loop, a norm's sum of squares): one
// workgroup (a loop of one iteration on blockIdx.x around the nest) shares
// it.
// CHECK-LABEL: func.func @sum
// CHECK: tl.for %{{.*}} = %c0{{.*}} to %c1{{.*}} step %c1{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK: memref.alloca() {{.*}} : memref<64xf32>
// CHECK: tl.block "sum_rf_init"
// CHECK: tl.block "sum_rf"
// CHECK: tl.block "sum_subgroup"
// CHECK: to %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for
// CHECK-NEXT: tl.block "sum" (
// TREE-LABEL: func.func @sum
// TREE: tl.block "sum_tree5"
// TREE: to %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// TREE-NEXT: tl.block "sum" (
func.func @sum(%x: memref<256xf32>, %s: memref<1xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  tl.for %k = %c0 to %c256 step %c1 {
    tl.block "sum" (%z = spatial %c0, %kk = reduce %k) reads(%x[%kk] : memref<256xf32>, %s[%z] : memref<1xf32>) writes(%s[%z] : memref<1xf32>) init {
      affine.store %cst, %s[symbol(%z)] : memref<1xf32>
    } {
      %0 = affine.load %x[symbol(%kk)] : memref<256xf32>
      %1 = affine.load %s[symbol(%z)] : memref<1xf32>
      %2 = arith.addf %1, %0 : f32
      affine.store %2, %s[symbol(%z)] : memref<1xf32>
    }
  }
  return
}

// -----

// 172 products per output (2 x 2 x 43): no power of two of 8 or more
// divides them, so the threads do not share the reduction: one output a
// thread, the products serial.
// CHECK-LABEL: func.func @odd
// CHECK: tl.for {{.*}} to %c64 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for {{.*}} to %c172 step %c1 {
// CHECK-NOT: memref.alloca
func.func @odd(%x: memref<1x172xf32>, %w: memref<64x172xf32>, %y: memref<1x64xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c172 = arith.constant 172 : index
  %c64 = arith.constant 64 : index
  tl.for %n = %c0 to %c64 step %c1 {
    tl.for %k = %c0 to %c172 step %c1 {
      tl.block "matmul" (%t = spatial %c0, %r = spatial %n, %kk = reduce %k) reads(%x[%t, %kk] : memref<1x172xf32>, %w[%r, %kk] : memref<64x172xf32>, %y[%t, %r] : memref<1x64xf32>) writes(%y[%t, %r] : memref<1x64xf32>) init {
        affine.store %cst, %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
      } {
        %0 = affine.load %x[symbol(%t), symbol(%kk)] : memref<1x172xf32>
        %1 = affine.load %w[symbol(%r), symbol(%kk)] : memref<64x172xf32>
        %2 = affine.load %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 : f32
        affine.store %4, %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
      }
    }
  }
  return
}

// -----

// An output head of 151936 rows of 128 products: 64 lanes would take only 2
// products each, so a workgroup serves 2 rows (each lane 2 products of each,
// the partials [2 rows][64 lanes]); the 75968 workgroups, past the 65535 a
// grid axis is guaranteed, split exactly into blockIdx.y x blockIdx.x
// (2 x 37984). The subgroup step and the write loop over the rows.
// CHECK-LABEL: func.func @head
// CHECK: tl.for {{.*}} to %c2{{.*}} step %c1{{.*}} kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for {{.*}} to %c37984 step %c1{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK: memref.alloca() {{.*}} : memref<2x64xf32>
// CHECK: tl.for {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "matmul_rf" ({{.*}}) reads({{.*}}) writes(%alloca[%{{.*}}, %{{.*}}] : memref<2x64xf32>)
// CHECK: tl.for {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.for {{.*}} to %c2
// CHECK-NEXT: tl.block "matmul_subgroup"
// CHECK: tl.for {{.*}} to %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for {{.*}} to %c2
func.func @head(%x: memref<1x128xf32>, %w: memref<151936x128xf32>, %y: memref<1x151936xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %cn = arith.constant 151936 : index
  tl.for %n = %c0 to %cn step %c1 {
    tl.for %k = %c0 to %c128 step %c1 {
      tl.block "matmul" (%t = spatial %c0, %r = spatial %n, %kk = reduce %k) reads(%x[%t, %kk] : memref<1x128xf32>, %w[%r, %kk] : memref<151936x128xf32>, %y[%t, %r] : memref<1x151936xf32>) writes(%y[%t, %r] : memref<1x151936xf32>) init {
        affine.store %cst, %y[symbol(%t), symbol(%r)] : memref<1x151936xf32>
      } {
        %0 = affine.load %x[symbol(%t), symbol(%kk)] : memref<1x128xf32>
        %1 = affine.load %w[symbol(%r), symbol(%kk)] : memref<151936x128xf32>
        %2 = affine.load %y[symbol(%t), symbol(%r)] : memref<1x151936xf32>
        %3 = arith.mulf %0, %1 : f32
        %4 = arith.addf %2, %3 : f32
        affine.store %4, %y[symbol(%t), symbol(%r)] : memref<1x151936xf32>
      }
    }
  }
  return
}

// -----

// Decode attention's shape: 4 heads (constant) around a sequence of nests.
// One workgroup per head; each nest a step of it: the positions' scores on
// threadIdx.x (a partial tile of min(256, n)); the max over them shared by
// 64 lanes (whole runs of 64 positions: partials in workgroup memory, a
// subgroup maximum, the subgroups' totals by one thread) with the positions
// after the last run on one thread ("max_tail"); the bare block on one
// thread, the output's 64 elements on threadIdx.x.
// CHECK-LABEL: func.func @steps
// CHECK: tl.for %[[H:.*]] = %c0 to %c4 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK-NEXT: memref.alloca() {{.*}} : memref<64xf32>
// CHECK: tl.for {{.*}} to %{{.*}} step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "scores"
// CHECK: tl.block "max_rf_init"
// CHECK: tl.for {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for {{.*}} to %{{.*}} step %c1{{.*}} {
// CHECK: tl.block "max_rf"
// CHECK: tl.block "max_subgroup"
// CHECK: gpu.subgroup_reduce maximumf
// CHECK: tl.for {{.*}} to %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "max" (
// CHECK: tl.for {{.*}} to %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "max_tail"
// CHECK: tl.for {{.*}} to %c1{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "scale"
// CHECK: tl.for {{.*}} to %c64 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "out"
func.func @steps(%q: memref<4x64xf32>, %s: memref<4x256xf32>, %m: memref<4xf32>, %o: memref<4x64xf32>, %n: index) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %len = arith.minui %n, %c256 : index
  tl.for %h = %c0 to %c4 step %c1 {
    tl.for %p = %c0 to %len step %c1 {
      tl.block "scores" (%vh = spatial %h, %vp = spatial %p) reads(%q[%vh, %vp] : memref<4x64xf32>) writes(%s[%vh, %vp] : memref<4x256xf32>) {
        %0 = affine.load %q[symbol(%vh), symbol(%vp)] : memref<4x64xf32>
        affine.store %0, %s[symbol(%vh), symbol(%vp)] : memref<4x256xf32>
      }
    }
    tl.for %p = %c0 to %len step %c1 {
      tl.block "max" (%vh = spatial %h, %vp = reduce %p) reads(%s[%vh, %vp] : memref<4x256xf32>, %m[%vh] : memref<4xf32>) writes(%m[%vh] : memref<4xf32>) init {
        affine.store %cst, %m[symbol(%vh)] : memref<4xf32>
      } {
        %0 = affine.load %s[symbol(%vh), symbol(%vp)] : memref<4x256xf32>
        %1 = affine.load %m[symbol(%vh)] : memref<4xf32>
        %2 = arith.maximumf %0, %1 : f32
        affine.store %2, %m[symbol(%vh)] : memref<4xf32>
      }
    }
    tl.block "scale" (%vh = spatial %h) reads(%m[%vh] : memref<4xf32>) writes(%m[%vh] : memref<4xf32>) {
      %0 = affine.load %m[symbol(%vh)] : memref<4xf32>
      %1 = arith.addf %0, %0 : f32
      affine.store %1, %m[symbol(%vh)] : memref<4xf32>
    }
    tl.for %d = %c0 to %c64 step %c1 {
      tl.block "out" (%vh = spatial %h, %vd = spatial %d) reads(%m[%vh] : memref<4xf32>) writes(%o[%vh, %vd] : memref<4x64xf32>) {
        %0 = affine.load %m[symbol(%vh)] : memref<4xf32>
        affine.store %0, %o[symbol(%vh), symbol(%vd)] : memref<4x64xf32>
      }
    }
  }
  return
}

// -----

// Grouped-query attention: 2 query heads per KV head are fewer than a
// subgroup, so they run in turn and the 64 elements inside each on the
// threads.
// CHECK-LABEL: func.func @gqa
// CHECK: tl.for {{.*}} to %c2 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK: tl.for {{.*}} to %c2 step %c1 {
// CHECK-NEXT: tl.for {{.*}} to %c64 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "init"
func.func @gqa(%o: memref<4x64xf32>, %m: memref<4xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  tl.for %kvh = %c0 to %c2 step %c1 {
    tl.for %g = %c0 to %c2 step %c1 {
      tl.for %d = %c0 to %c64 step %c1 {
        tl.block "init" (%vk = spatial %kvh, %vg = spatial %g, %vd = spatial %d) reads() writes(%o[%vk * 2 + %vg, %vd] : memref<4x64xf32>) {
          affine.store %cst, %o[symbol(%vk) * 2 + symbol(%vg), symbol(%vd)] : memref<4x64xf32>
        }
      }
    }
    tl.for %g = %c0 to %c2 step %c1 {
      tl.block "zero" (%vk = spatial %kvh, %vg = spatial %g) reads() writes(%m[%vk * 2 + %vg] : memref<4xf32>) {
        affine.store %cst, %m[symbol(%vk) * 2 + symbol(%vg)] : memref<4xf32>
      }
    }
  }
  return
}

// -----

// A prompt's transposed V store: the token loop's independence rests on the
// block's declaration (pos0 + t could reach the next element's slice as far
// as the analysis knows); the tokens on blockIdx.y, the 64 elements of a
// head on the threads, where one thread ran them all.
// CHECK-LABEL: func.func @kv_store
// CHECK: tl.for {{.*}} to %{{.*}} step %c1 kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for {{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "kv_store_v"
func.func @kv_store(%x: memref<?x64xf32>, %kv: memref<131072xf32>, %pos0: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  tl.for %t = %c0 to %n step %c1 {
    %p = arith.addi %t, %pos0 : index
    tl.for %d = %c0 to %c64 step %c1 {
      tl.block "kv_store_v" (%vt = spatial %t, %vp = spatial %p, %vd = spatial %d) reads(%x[%vt, %vd] : memref<?x64xf32>) writes(%kv[%vd * 2048 + %vp] : memref<131072xf32>) {
        %v = affine.load %x[%vt, %vd] : memref<?x64xf32>
        affine.store %v, %kv[%vd * 2048 + %vp] : memref<131072xf32>
      }
    }
  }
  return
}

// -----

// A prompt's matmul (tokens dynamic, 96 outputs, 256 products): each thread
// takes 8 tokens of 4 outputs, so that each weight element it loads serves
// 8 tokens and each activation 4 outputs; their 32 sums are partials in
// registers (rfactor over a lane of one, the tile's loops unrolled). The
// whole tiles on blockIdx.y, the 24 threads of 4 outputs in a workgroup;
// the tokens past the last whole tile in a nest of their own
// ("matmul_tail"), one token per blockIdx.y.
// CHECK-LABEL: func.func @prompt
// CHECK: %[[TILES:.*]] = arith.divui %{{.*}}, %c8
// CHECK: tl.for {{.*}} to %[[TILES]] step %c1{{.*}} kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for {{.*}} to %c24{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: memref.alloca() {{.*}} : memref<4x8x1xf32>
// CHECK: kind(unrolled)
// CHECK: tl.block "matmul_rf_init"
// CHECK: tl.for {{.*}} to %c256
// CHECK: tl.for {{.*}} to %c4{{.*}} step %c1{{.*}} kind(unrolled)
// CHECK-NEXT: tl.for {{.*}} to %c8{{.*}} step %c1{{.*}} kind(unrolled)
// CHECK: tl.block "matmul_rf"
// CHECK: tl.block "matmul" (
// CHECK: kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.block "matmul_tail"
func.func @prompt(%x: memref<?x256xf32>, %w: memref<96x256xf32>, %y: memref<?x96xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c96 = arith.constant 96 : index
  %c256 = arith.constant 256 : index
  %n = memref.dim %x, %c0 : memref<?x256xf32>
  tl.for %t = %c0 to %n step %c1 {
    tl.for %o = %c0 to %c96 step %c1 {
      tl.for %k = %c0 to %c256 step %c1 {
        tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vk = reduce %k) reads(%x[%vt, %vk] : memref<?x256xf32>, %w[%vo, %vk] : memref<96x256xf32>, %y[%vt, %vo] : memref<?x96xf32>) writes(%y[%vt, %vo] : memref<?x96xf32>) init {
          affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<?x96xf32>
        } {
          %0 = affine.load %x[symbol(%vt), symbol(%vk)] : memref<?x256xf32>
          %1 = affine.load %w[symbol(%vo), symbol(%vk)] : memref<96x256xf32>
          %2 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<?x96xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %y[symbol(%vt), symbol(%vo)] : memref<?x96xf32>
        }
      }
    }
  }
  return
}

// -----

// A prompt's matmul whose outputs split into whole workgroups (512 = 2 x 64
// threads x 4 outputs each) stages the activations: a workgroup takes 8
// tokens of 256 outputs, and the 512 products run in 2 chunks of 256; at
// each chunk the workgroup first copies the 8 tokens' 256 activations into
// workgroup memory (stage: 8x256, consecutive threads copying consecutive
// elements), then each thread adds its 4 outputs' products for the 8 tokens
// from there (each activation it loads serving 4 outputs). The chunks' loop
// runs outside the threads', so each thread's 4x8 sums sit in a buffer
// indexed by its thread (64x4x8x1, the GPU conversion makes it the
// thread's own).
// CHECK-LABEL: func.func @staged
// CHECK: tl.for {{.*}} kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for {{.*}} to %c2{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK-NEXT: %[[ACC:.*]] = memref.alloca() {{.*}} : memref<64x4x8x1xf32>
// CHECK: tl.for %[[L0:.*]] = {{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "matmul_rf_init" (%[[V0:.*]] = spatial %[[L0]], {{.*}}) reads() writes(%[[ACC]][%[[V0]],
// CHECK: %[[X:.*]] = memref.alloca() {{.*}} : memref<8x256xf32>
// CHECK-NEXT: tl.for {{.*}} to %c2{{.*}} step %{{[^ ]*}} {
// CHECK: tl.for %[[C:.*]] = {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for {{.*}} to %c8
// CHECK-NEXT: tl.for {{.*}} to %c4
// CHECK: tl.block "matmul_rf_stage" {{.*}} reads(%arg0[{{.*}}]{{.*}}) writes(%[[X]][%{{[^ ]*}}, %{{[^ ]*}}] : memref<8x256xf32>)
// CHECK: tl.for %[[L1:.*]] = {{.*}} to %c64{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "matmul_rf" ({{.*}}%{{.*}} = spatial %[[L1]]{{.*}}) reads(%[[X]][
// CHECK: affine.load %[[X]]
// CHECK: tl.for %[[L2:.*]] = {{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "matmul" ({{.*}}) reads(%arg2{{.*}}, %[[ACC]]
// CHECK: tl.block "matmul_tail"
// On a CPU device (lavapipe) workgroup memory is ordinary memory: no
// staging, the registers' rule of @prompt.
// CPUDEV-LABEL: func.func @staged
// CPUDEV-NOT: _stage"
// CPUDEV: memref.alloca() {{.*}} : memref<4x8x1xf32>
// CPUDEV-NOT: _stage"
func.func @staged(%x: memref<?x512xf32>, %w: memref<512x512xf32>, %y: memref<?x512xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512o = arith.constant 512 : index
  %c512 = arith.constant 512 : index
  %n = memref.dim %x, %c0 : memref<?x512xf32>
  tl.for %t = %c0 to %n step %c1 {
    tl.for %o = %c0 to %c512o step %c1 {
      tl.for %k = %c0 to %c512 step %c1 {
        tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vk = reduce %k) reads(%x[%vt, %vk] : memref<?x512xf32>, %w[%vo, %vk] : memref<512x512xf32>, %y[%vt, %vo] : memref<?x512xf32>) writes(%y[%vt, %vo] : memref<?x512xf32>) init {
          affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<?x512xf32>
        } {
          %0 = affine.load %x[symbol(%vt), symbol(%vk)] : memref<?x512xf32>
          %1 = affine.load %w[symbol(%vo), symbol(%vk)] : memref<512x512xf32>
          %2 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<?x512xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %y[symbol(%vt), symbol(%vo)] : memref<?x512xf32>
        }
      }
    }
  }
  return
}

// -----

// A staged matmul of fewer outputs than a subgroup's threads' worth (64
// outputs, 16 threads of 4): every step still runs on the 16 threads (not
// the steps' rule for a loop shorter than a subgroup, which would run its
// iterations in turn, a barrier each), the copy's consecutive threads on
// consecutive elements.
// CHECK-LABEL: func.func @staged_narrow
// CHECK: tl.for %[[L0:.*]] = {{.*}} to %c16{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "matmul_rf_init"
// CHECK: tl.for %[[C:.*]] = {{.*}} to %c16{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.for {{.*}} to %c8
// CHECK-NEXT: tl.for %[[J:.*]] = {{.*}} to %c16
// CHECK: %[[O:.*]] = arith.muli %[[J]], %c16
// CHECK-NEXT: arith.addi %[[O]], %[[C]]
// CHECK: tl.block "matmul_rf_stage"
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "matmul_rf"
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: tl.block "matmul"
func.func @staged_narrow(%x: memref<?x256xf32>, %w: memref<64x256xf32>, %y: memref<?x64xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %n = memref.dim %x, %c0 : memref<?x256xf32>
  tl.for %t = %c0 to %n step %c1 {
    tl.for %o = %c0 to %c64 step %c1 {
      tl.for %k = %c0 to %c256 step %c1 {
        tl.block "matmul" (%vt = spatial %t, %vo = spatial %o, %vk = reduce %k) reads(%x[%vt, %vk] : memref<?x256xf32>, %w[%vo, %vk] : memref<64x256xf32>, %y[%vt, %vo] : memref<?x64xf32>) writes(%y[%vt, %vo] : memref<?x64xf32>) init {
          affine.store %cst, %y[symbol(%vt), symbol(%vo)] : memref<?x64xf32>
        } {
          %0 = affine.load %x[symbol(%vt), symbol(%vk)] : memref<?x256xf32>
          %1 = affine.load %w[symbol(%vo), symbol(%vk)] : memref<64x256xf32>
          %2 = affine.load %y[symbol(%vt), symbol(%vo)] : memref<?x64xf32>
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %2, %3 : f32
          affine.store %4, %y[symbol(%vt), symbol(%vo)] : memref<?x64xf32>
        }
      }
    }
  }
  return
}

// -----

// Decode's norm: a reduction to one value (no independent loop at its top)
// followed by the nest that reads it become the steps of one workgroup (a
// loop of one iteration on blockIdx.x around both): the sum shared by 64
// lanes (registers, subgroup sums, one thread's write), then the scale of
// the row's 256 elements on 256 threads. One launch instead of two.
// CHECK-LABEL: func.func @norm
// CHECK: tl.for {{.*}} to %c1{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK: tl.block "sumsq_rf_rf"
// CHECK: tl.block "sumsq_subgroup"
// CHECK: tl.block "sumsq" (
// CHECK: tl.for {{.*}} to %c256 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "scale"
// CHECK-NEXT: affine.load
// CHECK: return
func.func @norm(%x: memref<1x256xf32>, %g: memref<256xf32>, %s: memref<1xf32>, %y: memref<1x256xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  tl.for %k = %c0 to %c256 step %c1 {
    tl.block "sumsq" (%vk = reduce %k) reads(%x[0, %vk] : memref<1x256xf32>, %s[0] : memref<1xf32>) writes(%s[0] : memref<1xf32>) init {
      affine.store %cst, %s[0] : memref<1xf32>
    } {
      %0 = affine.load %x[0, symbol(%vk)] : memref<1x256xf32>
      %1 = affine.load %s[0] : memref<1xf32>
      %2 = arith.mulf %0, %0 : f32
      %3 = arith.addf %1, %2 : f32
      affine.store %3, %s[0] : memref<1xf32>
    }
  }
  tl.for %i = %c0 to %c256 step %c1 {
    tl.block "scale" (%vi = spatial %i) reads(%x[0, %vi] : memref<1x256xf32>, %s[0] : memref<1xf32>, %g[%vi] : memref<256xf32>) writes(%y[0, %vi] : memref<1x256xf32>) {
      %0 = affine.load %x[0, symbol(%vi)] : memref<1x256xf32>
      %1 = affine.load %s[0] : memref<1xf32>
      %2 = affine.load %g[symbol(%vi)] : memref<256xf32>
      %3 = arith.mulf %0, %1 : f32
      %4 = arith.mulf %3, %2 : f32
      affine.store %4, %y[0, symbol(%vi)] : memref<1x256xf32>
    }
  }
  return
}

// -----

// Prompt attention's shape: the tokens (a count known at run time) and 2
// heads around a sequence of nests. A workgroup per token and head (tokens
// on blockIdx.y, heads on blockIdx.x), each nest a step of it, as for
// decode's heads: the scores' positions on threadIdx.x, the output's 64
// elements on threadIdx.x. (Before, the heads were the threads of a
// token's workgroup, every position and element serial in each.)
// CHECK-LABEL: func.func @prompt_steps
// CHECK: tl.for {{.*}} to %{{.*}} step %c1 kind(thread_bound) thread("blockIdx.y")
// CHECK: tl.for {{.*}} to %c2 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK: tl.for {{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "scores"
// CHECK: tl.for {{.*}} to %c64 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK-NEXT: tl.block "out"
func.func @prompt_steps(%q: memref<?x2x64xf32>, %s: memref<?x2x256xf32>, %o: memref<?x2x64xf32>, %pos0: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %tokens = memref.dim %q, %c0 : memref<?x2x64xf32>
  tl.for %t = %c0 to %tokens step %c1 {
    %end = arith.addi %pos0, %t : index
    %len = arith.minui %end, %c64 : index
    tl.for %h = %c0 to %c2 step %c1 {
      tl.for %p = %c0 to %len step %c1 {
        tl.block "scores" (%vt = spatial %t, %vh = spatial %h, %vp = spatial %p) reads(%q[%vt, %vh, %vp] : memref<?x2x64xf32>) writes(%s[%vt, %vh, %vp] : memref<?x2x256xf32>) {
          %0 = affine.load %q[symbol(%vt), symbol(%vh), symbol(%vp)] : memref<?x2x64xf32>
          affine.store %0, %s[symbol(%vt), symbol(%vh), symbol(%vp)] : memref<?x2x256xf32>
        }
      }
      tl.for %d = %c0 to %c64 step %c1 {
        tl.block "out" (%vt = spatial %t, %vh = spatial %h, %vd = spatial %d) reads(%s[%vt, %vh, %vd] : memref<?x2x256xf32>) writes(%o[%vt, %vh, %vd] : memref<?x2x64xf32>) {
          %0 = affine.load %s[symbol(%vt), symbol(%vh), symbol(%vd)] : memref<?x2x256xf32>
          affine.store %0, %o[symbol(%vt), symbol(%vh), symbol(%vd)] : memref<?x2x64xf32>
        }
      }
    }
  }
  return
}

// -----

// A reduction whose outermost loop is too short for 8 lanes (4 blocks of
// 2 x 16 products, Q6_K's shape: 4 super-blocks a row): the lanes take the
// innermost loop of 16 (consecutive lanes, consecutive products), moved
// outside the rest; each lane's products summed in a register, the 16
// partials in a tree (16 lanes are not a subgroup of 32); 4 rows a
// workgroup (each lane would get one iteration of its loop per row).
// CHECK-LABEL: func.func @short_outer
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(thread_bound) thread("blockIdx.x")
// CHECK: memref.alloca() {{.*}} : memref<4x16xf32>
// CHECK: tl.block "matmul_rf_init"
// CHECK: tl.for {{.*}} to %c16{{.*}} kind(thread_bound) thread("threadIdx.x")
// CHECK: memref.alloca() {{.*}} : memref<4x1xf32>
// CHECK: tl.for {{.*}} to %c4{{.*}} step %c1{{.*}} {
// CHECK: tl.for {{.*}} to %c2 step
// CHECK: tl.block "matmul_rf_rf"
// CHECK: tl.block "matmul_tree0"
// CHECK-NOT: gpu.subgroup_reduce
func.func @short_outer(%x: memref<1x128xf32>, %w: memref<64x128xf32>, %y: memref<1x64xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  tl.for %n = %c0 to %c64 step %c1 {
    tl.for %b = %c0 to %c4 step %c1 {
      tl.for %j = %c0 to %c2 step %c1 {
        tl.for %l = %c0 to %c16 step %c1 {
          tl.block "matmul" (%t = spatial %c0, %r = spatial %n, %vb = reduce %b, %vj = reduce %j, %vl = reduce %l) reads(%x[%t, %vb * 32 + %vj * 16 + %vl] : memref<1x128xf32>, %w[%r, %vb * 32 + %vj * 16 + %vl] : memref<64x128xf32>, %y[%t, %r] : memref<1x64xf32>) writes(%y[%t, %r] : memref<1x64xf32>) init {
            affine.store %cst, %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
          } {
            %0 = affine.load %x[symbol(%t), symbol(%vb) * 32 + symbol(%vj) * 16 + symbol(%vl)] : memref<1x128xf32>
            %1 = affine.load %w[symbol(%r), symbol(%vb) * 32 + symbol(%vj) * 16 + symbol(%vl)] : memref<64x128xf32>
            %2 = affine.load %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
            %3 = arith.mulf %0, %1 : f32
            %4 = arith.addf %2, %3 : f32
            affine.store %4, %y[symbol(%t), symbol(%r)] : memref<1x64xf32>
          }
        }
      }
    }
  }
  return
}

// -----

// A step whose nest reduces inside its threads' loop (attention's values:
// each of 64 elements a sum over the tile's positions, a count known at run
// time): each thread sums in a register of its own (a buffer of one
// element, rfactor over a lane of one) and adds that into the output once,
// instead of loading and storing the output around every product.
// CHECK-LABEL: func.func @step_sums
// CHECK: tl.for {{.*}} to %c4 step %c1 kind(thread_bound) thread("blockIdx.x")
// CHECK: tl.for {{.*}} to %c64 step %c1 kind(thread_bound) thread("threadIdx.x")
// CHECK: %[[R:.*]] = memref.alloca() {{.*}} : memref<1xf32>
// CHECK: tl.block "values_rf_init"
// CHECK: tl.block "values_rf" ({{.*}}) reads({{.*}}) writes(%[[R]][
// CHECK: tl.block "values" ({{.*}}) reads({{.*}}%[[R]]
// CHECK: tl.block "scale"
func.func @step_sums(%w: memref<4x256xf32>, %v: memref<4x64x256xf32>, %o: memref<4x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %len = arith.minui %n, %c256 : index
  tl.for %h = %c0 to %c4 step %c1 {
    tl.for %d = %c0 to %c64 step %c1 {
      tl.for %p = %c0 to %len step %c1 {
        tl.block "values" (%vh = spatial %h, %vd = spatial %d, %vp = reduce %p) reads(%w[%vh, %vp] : memref<4x256xf32>, %v[%vh, %vd, %vp] : memref<4x64x256xf32>, %o[%vh, %vd] : memref<4x64xf32>) writes(%o[%vh, %vd] : memref<4x64xf32>) {
          %0 = affine.load %w[symbol(%vh), symbol(%vp)] : memref<4x256xf32>
          %1 = affine.load %v[symbol(%vh), symbol(%vd), symbol(%vp)] : memref<4x64x256xf32>
          %2 = arith.mulf %0, %1 : f32
          %3 = affine.load %o[symbol(%vh), symbol(%vd)] : memref<4x64xf32>
          %4 = arith.addf %3, %2 : f32
          affine.store %4, %o[symbol(%vh), symbol(%vd)] : memref<4x64xf32>
        }
      }
    }
    tl.for %d = %c0 to %c64 step %c1 {
      tl.block "scale" (%vh = spatial %h, %vd = spatial %d) reads(%o[%vh, %vd] : memref<4x64xf32>) writes(%o[%vh, %vd] : memref<4x64xf32>) {
        %0 = affine.load %o[symbol(%vh), symbol(%vd)] : memref<4x64xf32>
        %1 = arith.addf %0, %0 : f32
        affine.store %1, %o[symbol(%vh), symbol(%vd)] : memref<4x64xf32>
      }
    }
  }
  return
}
