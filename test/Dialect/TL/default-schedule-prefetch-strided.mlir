// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=cpu:znver4" | FileCheck %s
// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=cpu:znver4,prefetch=0" | FileCheck %s --check-prefix=OFF
// RUN: llm-opt %s -split-input-file -tl-default-schedule="target=cpu:znver4,prefetch_level=1" | FileCheck %s --check-prefix=NEAR

// A prompt's loop over its tokens (a matmul's row group, its epilogue: SiLU
// x up reads the gate's row of the token) reads one line of the gate per
// token, 3072 x 4 bytes apart: farther than a hardware prefetcher follows.
// That line is fetched 4 tokens ahead (49152 bytes), into the target's
// prefetch level. The other input moves 1 KiB a token (within the
// hardware's reach): no prefetch for it. The output is written, not read.
// CHECK: #[[AT:.+]] = affine_map<(d0, d1) -> (d0 * 3072 + d1 * 16)>
// CHECK-LABEL: func.func @prefill_epilogue
// CHECK: tl.for %[[G:.+]] = %{{.+}} to %c192 step %{{.+}} kind(parallel)
// CHECK-NEXT: tl.for %[[T:.+]] = %{{.+}} to %{{.+}} step %{{[a-z0-9_]+}} {
// CHECK-NEXT: %[[POS:.+]] = affine.apply #[[AT]](%[[T]], %[[G]])
// CHECK-NEXT: tl.prefetch %arg0[%[[POS]]] {bytes = 64 : i64, distance = 49152 : i64, level = 2 : i64, line = 64 : i64} : memref<?x3072xf32>
// CHECK-NOT: tl.prefetch
// CHECK: tl.block "epilogue"
// OFF-LABEL: func.func @prefill_epilogue
// OFF-NOT: tl.prefetch
// NEAR-LABEL: func.func @prefill_epilogue
// NEAR: tl.prefetch {{.*}}level = 1 : i64
func.func @prefill_epilogue(%gate: memref<?x3072xf32>, %x: memref<?x256xf32>, %out: memref<?x3072xf32>, %n: index) attributes {llmc.phase = "prefill"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c192 = arith.constant 192 : index
  tl.for %g = %c0 to %c192 step %c1 kind(parallel) {
    tl.for %t = %c0 to %n step %c1 {
      tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        tl.block "epilogue" (%vg = spatial %g, %vt = spatial %t, %vl = spatial %l)
            reads(%gate[%vt, %vg * 16 + %vl] : memref<?x3072xf32>, %x[%vt, %vl] : memref<?x256xf32>)
            writes(%out[%vt, %vg * 16 + %vl] : memref<?x3072xf32>) {
          %a = affine.load %gate[%vt, %vg * 16 + %vl] : memref<?x3072xf32>
          %b = affine.load %x[%vt, %vl] : memref<?x256xf32>
          %s = arith.mulf %a, %b : f32
          affine.store %s, %out[%vt, %vg * 16 + %vl] : memref<?x3072xf32>
        }
      }
    }
  }
  return
}

// -----

// A loop of few iterations (4 tokens) never reaches a prefetch's distance;
// a strided read of more than 4 lines a token (80 x 4 bytes: 5 lines)
// is a stream the hardware follows within each row: neither gets one.
// CHECK-LABEL: func.func @few_or_wide
// CHECK-NOT: tl.prefetch
// CHECK: return
func.func @few_or_wide(%gate: memref<?x3072xf32>, %out: memref<?x3072xf32>, %n: index) attributes {llmc.phase = "prefill"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c80 = arith.constant 80 : index
  tl.for %t = %c0 to %c4 step %c1 {
    tl.for %l = %c0 to %c16 step %c1 kind(vectorized) {
      tl.block "few" (%vt = spatial %t, %vl = spatial %l)
          reads(%gate[%vt, %vl] : memref<?x3072xf32>)
          writes(%out[%vt, %vl] : memref<?x3072xf32>) {
        %a = affine.load %gate[%vt, %vl] : memref<?x3072xf32>
        affine.store %a, %out[%vt, %vl] : memref<?x3072xf32>
      }
    }
  }
  tl.for %t = %c0 to %n step %c1 {
    tl.for %l = %c0 to %c80 step %c1 {
      tl.block "wide" (%vt = spatial %t, %vl = spatial %l)
          reads(%gate[%vt, %vl] : memref<?x3072xf32>)
          writes(%out[%vt, %vl] : memref<?x3072xf32>) {
        %a = affine.load %gate[%vt, %vl] : memref<?x3072xf32>
        affine.store %a, %out[%vt, %vl] : memref<?x3072xf32>
      }
    }
  }
  return
}
