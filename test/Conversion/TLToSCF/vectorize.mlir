// RUN: llm-opt %s -split-input-file -convert-tl-to-scf -canonicalize | FileCheck %s

// A dot product per row in 16 lanes: the lanes' partials are one vector,
// loaded and stored whole; the x and w reads are contiguous vector loads;
// the halving tree reads halves of the partials. No lane loop is left.
// CHECK-LABEL: func.func @gemv
// CHECK-NOT: tl.
// CHECK: scf.for %[[N:.+]] =
// CHECK: %[[RF:.+]] = memref.alloca() {{.*}} : memref<16xf32>
// CHECK: vector.store %{{.+}}, %[[RF]][%c0] : memref<16xf32>, vector<16xf32>
// CHECK: scf.for %[[K:.+]] =
// CHECK: %[[OFF:.+]] = arith.muli %[[K]], %c16
// CHECK: %[[X:.+]] = vector.load %{{.+}}[%[[OFF]]] : memref<64xf32>, vector<16xf32>
// CHECK: %[[W:.+]] = vector.load %{{.+}}[%[[N]], %{{.+}}] : memref<8x64xf32>, vector<16xf32>
// CHECK: %[[A:.+]] = vector.load %[[RF]][%c0] : memref<16xf32>, vector<16xf32>
// CHECK: %[[P:.+]] = arith.mulf %[[X]], %[[W]] : vector<16xf32>
// CHECK: %[[S:.+]] = arith.addf %[[A]], %[[P]] : vector<16xf32>
// CHECK: vector.store %[[S]], %[[RF]][%c0]
// CHECK: %[[LO:.+]] = vector.load %[[RF]][%c0] : memref<16xf32>, vector<8xf32>
// CHECK: %[[HI:.+]] = vector.load %[[RF]][%c8] : memref<16xf32>, vector<8xf32>
// CHECK: arith.addf %[[LO]], %[[HI]] : vector<8xf32>
func.func @gemv(%x: memref<64xf32>, %w: memref<8x64xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  tl.for %n = %c0 to %c8 step %c1 {
    %rf = memref.alloca() {alignment = 64 : i64} : memref<16xf32>
    tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
      tl.block "init" (%vl = spatial %l) reads() writes(%rf[%vl] : memref<16xf32>) {
        affine.store %zero, %rf[%vl] : memref<16xf32>
      }
    }
    tl.for %k = %c0 to %c4 step %c1 {
      %k16 = arith.muli %k, %c16 : index
      tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        tl.block "rf" (%vn = spatial %n, %vk = reduce %k16, %vl = spatial %l)
            reads(%x[%vk + %vl] : memref<64xf32>, %w[%vn, %vk + %vl] : memref<8x64xf32>, %rf[%vl] : memref<16xf32>)
            writes(%rf[%vl] : memref<16xf32>) {
          %a = affine.load %x[%vk + %vl] : memref<64xf32>
          %b = affine.load %w[%vn, %vk + %vl] : memref<8x64xf32>
          %s = affine.load %rf[%vl] : memref<16xf32>
          %p = arith.mulf %a, %b : f32
          %r = arith.addf %s, %p : f32
          affine.store %r, %rf[%vl] : memref<16xf32>
        }
      }
    }
    tl.for %i = %c0 to %c8 step %c1 kind(vectorized) {
      tl.block "tree0" (%vi = spatial %i) reads(%rf[%vi] : memref<16xf32>, %rf[%vi + 8] : memref<16xf32>)
          writes(%rf[%vi] : memref<16xf32>) {
        %a = affine.load %rf[%vi] : memref<16xf32>
        %b = affine.load %rf[%vi + 8] : memref<16xf32>
        %s = arith.addf %a, %b : f32
        affine.store %s, %rf[%vi] : memref<16xf32>
      }
    }
  }
  return
}

// -----

// An int8 dot product in groups of four: 8 lanes of 4-element groups are
// one vector of 32 bytes per operand (contiguous), the products are reduced
// by group into the 8 lanes of the accumulator (what VNNI's vpdpbusd does).
// A scale that depends on no lane stays a scalar.
// CHECK-LABEL: func.func @dot4
// CHECK: %[[A:.+]] = vector.load %{{.+}}[%c0] : memref<32xi8>, vector<32xi8>
// CHECK: %[[B:.+]] = vector.load %{{.+}}[%c0] : memref<32xi8>, vector<32xi8>
// CHECK: %[[ACC:.+]] = vector.load %{{.+}}[%c0] : memref<8xi32>, vector<8xi32>
// CHECK: %[[EA:.+]] = arith.extsi %[[A]] : vector<32xi8> to vector<32xi32>
// CHECK: %[[EB:.+]] = arith.extsi %[[B]] : vector<32xi8> to vector<32xi32>
// CHECK: %[[P:.+]] = arith.muli %[[EA]], %[[EB]] : vector<32xi32>
// CHECK: %[[G:.+]] = vector.shape_cast %[[P]] : vector<32xi32> to vector<8x4xi32>
// CHECK: %[[R:.+]] = vector.multi_reduction <add>, %[[G]], %[[ACC]] [1] : vector<8x4xi32> to vector<8xi32>
// CHECK: vector.store %[[R]], %{{.+}}[%c0] : memref<8xi32>, vector<8xi32>
func.func @dot4(%a: memref<32xi8>, %b: memref<32xi8>, %acc: memref<8xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  tl.for %l = %c0 to %c8 step %c1 kind(vectorized) {
    tl.for %g = %c0 to %c4 step %c1 kind(vectorized) {
      tl.block "dot" (%vl = spatial %l, %vg = reduce %g)
          reads(%a[%vl * 4 + %vg] : memref<32xi8>, %b[%vl * 4 + %vg] : memref<32xi8>, %acc[%vl] : memref<8xi32>)
          writes(%acc[%vl] : memref<8xi32>) {
        %x = affine.load %a[%vl * 4 + %vg] : memref<32xi8>
        %y = affine.load %b[%vl * 4 + %vg] : memref<32xi8>
        %s = affine.load %acc[%vl] : memref<8xi32>
        %xe = arith.extsi %x : i8 to i32
        %ye = arith.extsi %y : i8 to i32
        %p = arith.muli %xe, %ye : i32
        %r = arith.addi %s, %p : i32
        affine.store %r, %acc[%vl] : memref<8xi32>
      }
    }
  }
  return
}

// -----

// Lanes over chunks of four bytes side by side with other rows' chunks (an
// interleaved weight: byte l of a row at (l floordiv 4) * 64 + l mod 4):
// the first four lanes look contiguous, the fifth jumps; not one vector
// load of 16 bytes, each lane its own.
// CHECK-LABEL: func.func @chunked
// CHECK-NOT: vector.load
// CHECK-COUNT-16: memref.load %{{[^[]+}}[%{{.+}}] : memref<256xi8>
// CHECK: vector.from_elements
// CHECK: vector.store
func.func @chunked(%w: memref<256xi8>, %y: memref<16xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
    tl.block "gather" (%vl = spatial %l)
        reads(%w[(%vl floordiv 4) * 64 + %vl mod 4] : memref<256xi8>) writes(%y[%vl] : memref<16xi8>) {
      %a = affine.load %w[(%vl floordiv 4) * 64 + %vl mod 4] : memref<256xi8>
      affine.store %a, %y[%vl] : memref<16xi8>
    }
  }
  return
}

// Lanes that read the same element get one scalar load and a broadcast;
// lanes reading every other element of a small range load the range and
// pick their elements; lanes far apart go one by one.
// CHECK-LABEL: func.func @uniform_and_strided
// CHECK: %[[S:.+]] = memref.load %{{.+}}[%c0] : memref<1xf32>
// CHECK: %[[R:.+]] = vector.load %{{.+}}[%c0] : memref<8xf32>, vector<7xf32>
// CHECK: vector.shuffle %[[R]], %[[R]] [0, 2, 4, 6] : vector<7xf32>, vector<7xf32>
// CHECK-COUNT-4: memref.load %{{[^[]+}}[%{{.+}}] : memref<64xf32>
// CHECK: vector.from_elements
// CHECK: vector.broadcast %[[S]] : f32 to vector<4xf32>
// CHECK: vector.store
func.func @uniform_and_strided(%s: memref<1xf32>, %x: memref<8xf32>, %z: memref<64xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  tl.for %l = %c0 to %c4 step %c1 kind(vectorized) {
    tl.block "scale" (%vl = spatial %l)
        reads(%s[0] : memref<1xf32>, %x[%vl * 2] : memref<8xf32>, %z[%vl * 16] : memref<64xf32>) writes(%y[%vl] : memref<4xf32>) {
      %a = affine.load %s[0] : memref<1xf32>
      %b = affine.load %x[%vl * 2] : memref<8xf32>
      %c = affine.load %z[%vl * 16] : memref<64xf32>
      %p = arith.mulf %a, %b : f32
      %q = arith.mulf %p, %c : f32
      affine.store %q, %y[%vl] : memref<4xf32>
    }
  }
  return
}

// -----

// A band whose lanes read a permutation of a contiguous range (here the
// pairs of a dot product, odd element first: a reversed group loop, as
// VDPBF16PS orders them) is one vector load and a shuffle; the group is
// reduced into the lanes in its order.
// CHECK-LABEL: func.func @pairs_odd_first
// CHECK: %[[X:.+]] = vector.load %{{.+}}[%{{.+}}] : memref<64xf32>, vector<32xf32>
// CHECK: vector.shuffle %[[X]], %[[X]] [1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 17, 16, 19, 18, 21, 20, 23, 22, 25, 24, 27, 26, 29, 28, 31, 30] : vector<32xf32>, vector<32xf32>
// CHECK: %[[P:.+]] = vector.shape_cast %{{.+}} : vector<32xf32> to vector<16x2xf32>
// CHECK: vector.multi_reduction <add>, %[[P]], %{{.+}} [1] : vector<16x2xf32> to vector<16xf32>
#rev = affine_map<(d0) -> (-d0 + 1)>
func.func @pairs_odd_first(%x: memref<64xf32>, %w: memref<64xf32>, %parts: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  tl.for %k = %c0 to %c2 step %c1 {
    %base = arith.muli %k, %c32 : index
    tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
      tl.for %p = %c0 to %c2 step %c1 kind(vectorized) {
        %q = affine.apply #rev(%p)
        %e = arith.addi %base, %q : index
        tl.block "dot_rf" (%ve = reduce %e, %vl = spatial %l)
            reads(%x[%ve + %vl * 2] : memref<64xf32>, %w[%ve + %vl * 2] : memref<64xf32>, %parts[%vl] : memref<16xf32>)
            writes(%parts[%vl] : memref<16xf32>) {
          %a = affine.load %x[%ve + %vl * 2] : memref<64xf32>
          %b = affine.load %w[%ve + %vl * 2] : memref<64xf32>
          %s = affine.load %parts[%vl] : memref<16xf32>
          %m = arith.mulf %a, %b : f32
          %r = arith.addf %s, %m : f32
          affine.store %r, %parts[%vl] : memref<16xf32>
        }
      }
    }
  }
  return
}

// -----

// A blocked layout (values in blocks of 16 positions, [t / 16][d][16]): the
// lanes of a block's 16 positions, t = 16 * k + lane, read one contiguous
// vector ((t floordiv 16) * 64 + d * 16 + t mod 16 is k * 64 + d * 16 +
// lane over the band); 8 lanes from t = 8 * k + lane cross no block only
// if k's parity is known, so they read lane by lane.
// CHECK-LABEL: func.func @blocked_lanes
// CHECK: scf.for %[[K:.+]] =
// CHECK: %[[OFF:.+]] = arith.muli %[[K]], %c64
// CHECK: vector.load %{{.+}}[%[[OFF]]] : memref<256xf32>, vector<16xf32>
// CHECK: scf.for
// CHECK-NOT: vector.load %{{.+}} : memref<256xf32>
// CHECK-COUNT-8: memref.load %{{.+}} : memref<256xf32>
func.func @blocked_lanes(%v: memref<256xf32>, %y: memref<16xf32>, %z: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  tl.for %k = %c0 to %c4 step %c1 {
    %k16 = arith.muli %k, %c16 : index
    tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
      tl.block "copy" (%vk = spatial %k16, %vl = spatial %l)
          reads(%v[((%vk + %vl) floordiv 16) * 64 + (%vk + %vl) mod 16] : memref<256xf32>)
          writes(%y[%vl] : memref<16xf32>) {
        %a = affine.load %v[((%vk + %vl) floordiv 16) * 64 + (%vk + %vl) mod 16] : memref<256xf32>
        affine.store %a, %y[%vl] : memref<16xf32>
      }
    }
  }
  tl.for %k = %c0 to %c4 step %c1 {
    %k8 = arith.muli %k, %c8 : index
    tl.for %l = %c0 to %c8 step %c1 kind(vectorized) {
      tl.block "copy8" (%vk = spatial %k8, %vl = spatial %l)
          reads(%v[((%vk + %vl) floordiv 16) * 64 + (%vk + %vl) mod 16] : memref<256xf32>)
          writes(%z[%vl] : memref<8xf32>) {
        %a = affine.load %v[((%vk + %vl) floordiv 16) * 64 + (%vk + %vl) mod 16] : memref<256xf32>
        affine.store %a, %z[%vl] : memref<8xf32>
      }
    }
  }
  return
}

// -----

// 32 lanes over blocks of 16 (t = 32 * k + lane): each block's 16 lanes are
// one vector load, the two joined.
// CHECK-LABEL: func.func @blocked_segments
// CHECK: %[[A:.+]] = vector.load %{{.+}} : memref<256xf32>, vector<16xf32>
// CHECK: %[[B:.+]] = vector.load %{{.+}} : memref<256xf32>, vector<16xf32>
// CHECK: vector.shuffle %[[A]], %[[B]] [0, 1, {{.*}}, 31] : vector<16xf32>, vector<16xf32>
// CHECK-NOT: memref.load
func.func @blocked_segments(%v: memref<256xf32>, %y: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  tl.for %k = %c0 to %c2 step %c1 {
    %k32 = arith.muli %k, %c32 : index
    tl.for %l = %c0 to %c32 step %c1 kind(vectorized) {
      tl.block "copy" (%vk = spatial %k32, %vl = spatial %l)
          reads(%v[((%vk + %vl) floordiv 16) * 64 + (%vk + %vl) mod 16] : memref<256xf32>)
          writes(%y[%vl] : memref<32xf32>) {
        %a = affine.load %v[((%vk + %vl) floordiv 16) * 64 + (%vk + %vl) mod 16] : memref<256xf32>
        affine.store %a, %y[%vl] : memref<32xf32>
      }
    }
  }
  return
}

// -----

// 36 lanes over blocks of 4 f32 (16 bytes): halves, quarters and eighths
// of the band cross blocks, and 9 segments of 4 would not join in pairs:
// lane by lane. So on a view whose rows are not contiguous (a stride of 2):
// no vector load of it at all.
// CHECK-LABEL: func.func @blocked_odd_band
// CHECK-NOT: vector.load
// CHECK-COUNT-36: memref.load %{{.+}} : memref<256xf32>
// CHECK-NOT: vector.load
// CHECK-COUNT-16: memref.load %{{.+}} : memref<256xf32, strided<[2]>>
// CHECK: return
func.func @blocked_odd_band(%v: memref<256xf32>, %s: memref<256xf32, strided<[2]>>, %y: memref<36xf32>, %z: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c36 = arith.constant 36 : index
  tl.for %l = %c0 to %c36 step %c1 kind(vectorized) {
    tl.block "odd" (%vl = spatial %l)
        reads(%v[(%vl floordiv 4) * 8 + %vl mod 4] : memref<256xf32>)
        writes(%y[%vl] : memref<36xf32>) {
      %a = affine.load %v[(%vl floordiv 4) * 8 + %vl mod 4] : memref<256xf32>
      affine.store %a, %y[%vl] : memref<36xf32>
    }
  }
  tl.for %k = %c0 to %c2 step %c1 {
    %k16 = arith.muli %k, %c16 : index
    tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
      tl.block "strided" (%vk = spatial %k16, %vl = spatial %l)
          reads(%s[((%vk + %vl) floordiv 8) * 16 + (%vk + %vl) mod 8] : memref<256xf32, strided<[2]>>)
          writes(%z[%vl] : memref<16xf32>) {
        %a = affine.load %s[((%vk + %vl) floordiv 8) * 16 + (%vk + %vl) mod 8] : memref<256xf32, strided<[2]>>
        affine.store %a, %z[%vl] : memref<16xf32>
      }
    }
  }
  return
}
