// RUN: llm-opt %s -split-input-file -verify-diagnostics

func.func @undeclared_read(%x: memref<8xf32>, %y: memref<8xf32>, %i: index) {
  tl.block "b" (%v = spatial %i) reads() writes(%y[%v] : memref<8xf32>) {
    // expected-error @+1 {{accesses a buffer that is not in the reads of tl.block 'b'}}
    %a = affine.load %x[%v] : memref<8xf32>
    affine.store %a, %y[%v] : memref<8xf32>
  }
  return
}

// -----

func.func @wrong_region(%x: memref<8xf32>, %y: memref<8xf32>, %i: index) {
  tl.block "b" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%y[%v] : memref<8xf32>) {
    // expected-error @+1 {{access affine_map<(d0) -> (d0 + 1)> does not match any declared read region of tl.block 'b'}}
    %a = affine.load %x[%v + 1] : memref<8xf32>
    affine.store %a, %y[%v] : memref<8xf32>
  }
  return
}

// -----

func.func @undeclared_write(%x: memref<8xf32>, %y: memref<8xf32>, %i: index) {
  tl.block "b" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%y[%v] : memref<8xf32>) {
    %a = affine.load %x[%v] : memref<8xf32>
    // expected-error @+1 {{accesses a buffer that is not in the writes of tl.block 'b'}}
    affine.store %a, %x[%v] : memref<8xf32>
  }
  return
}

// -----

func.func @memref_access(%x: memref<8xf32>, %y: memref<8xf32>, %i: index) {
  tl.block "b" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes(%y[%v] : memref<8xf32>) {
    // expected-error @+1 {{tl.block bodies access buffers through affine.load/affine.store}}
    %a = memref.load %x[%v] : memref<8xf32>
    affine.store %a, %y[%v] : memref<8xf32>
  }
  return
}

// -----

func.func @init_without_reduction(%y: memref<8xf32>, %i: index) {
  // expected-error @+1 {{has an init region but no reduction variable}}
  tl.block "b" (%v = spatial %i) reads() writes(%y[%v] : memref<8xf32>) init {
    %z = arith.constant 0.0 : f32
    affine.store %z, %y[%v] : memref<8xf32>
  } {
    %z = arith.constant 1.0 : f32
    affine.store %z, %y[%v] : memref<8xf32>
  }
  return
}

// -----

func.func @no_writes(%x: memref<8xf32>, %i: index) {
  // expected-error @+1 {{a block must write at least one buffer}}
  tl.block "b" (%v = spatial %i) reads(%x[%v] : memref<8xf32>) writes() {
    %a = affine.load %x[%v] : memref<8xf32>
  }
  return
}

// -----

func.func @region_rank(%x: memref<8x8xf32>, %y: memref<8xf32>, %i: index) {
  // expected-error @+1 {{has 1 results for a buffer of rank 2}}
  tl.block "b" (%v = spatial %i) reads(%x[%v] : memref<8x8xf32>) writes(%y[%v] : memref<8xf32>) {
    %z = arith.constant 1.0 : f32
    affine.store %z, %y[%v] : memref<8xf32>
  }
  return
}

// -----

func.func @unknown_name(%y: memref<8xf32>, %i: index, %j: index) {
  // expected-error @+1 {{region index '%j' is not an iteration variable of the block}}
  tl.block "b" (%v = spatial %i) reads() writes(%y[%j] : memref<8xf32>) {
  }
  return
}

// -----

func.func @unknown_iter_kind(%y: memref<8xf32>, %i: index) {
  // expected-error @+1 {{unknown iteration kind 'sideways' (expected spatial or reduce)}}
  tl.block "b" (%v = sideways %i) reads() writes(%y[%v] : memref<8xf32>) {
  }
  return
}

// -----

func.func @thread_tag_missing(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{a thread_bound loop needs a thread axis}}
  tl.for %i = %c0 to %n step %c1 kind(thread_bound) {
  }
  return
}

// -----

func.func @thread_tag_serial(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{only thread_bound loops name a thread axis}}
  tl.for %i = %c0 to %n step %c1 thread("threadIdx.x") {
  }
  return
}

// -----

func.func @unknown_loop_kind(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{unknown loop kind 'sideways'}}
  tl.for %i = %c0 to %n step %c1 kind(sideways) {
  }
  return
}

// -----

func.func @prefetch_strided(%w: memref<8x8xi8, strided<[16, 1]>>, %i: index) {
  // expected-error @+1 {{needs a buffer with the identity layout (contiguous storage)}}
  tl.prefetch %w[%i] {bytes = 64 : i64, distance = 64 : i64, level = 1 : i64, line = 64 : i64} : memref<8x8xi8, strided<[16, 1]>>
  return
}

// -----

func.func @prefetch_no_line(%w: memref<64xi8>, %i: index) {
  // expected-error @+1 {{needs distance >= 0, bytes > 0 and line > 0}}
  tl.prefetch %w[%i] {bytes = 64 : i64, distance = 64 : i64, level = 1 : i64, line = 0 : i64} : memref<64xi8>
  return
}

// -----

func.func @prefetch_scalar(%w: memref<i8>, %i: index) {
  // expected-error @+1 {{needs a buffer of rank 1 or more}}
  tl.prefetch %w[%i] {bytes = 64 : i64, distance = 64 : i64, level = 1 : i64, line = 64 : i64} : memref<i8>
  return
}

// -----

func.func @prefetch_level(%w: memref<64xi8>, %i: index) {
  // expected-error @+1 {{needs a cache level of 1, 2 or 3, got 4}}
  tl.prefetch %w[%i] {bytes = 64 : i64, distance = 64 : i64, level = 4 : i64, line = 64 : i64} : memref<64xi8>
  return
}
