// RUN: llm-opt %s -cpu-int8-dot="target=cpu:znver4" | FileCheck %s --check-prefix=AVX512
// RUN: llm-opt %s -cpu-int8-dot="target=cpu:alderlake" | FileCheck %s --check-prefix=AVXVNNI
// RUN: llm-opt %s -cpu-int8-dot="target=cpu:x86-64-v3" | FileCheck %s --check-prefix=NONE

// Groups of four byte products summed into i32 lanes are VPDPBUSD: unsigned
// bytes (zero-extended, or masked below 128) times signed ones.
// AVX512-LABEL: func.func @unsigned_times_signed
// AVX512: %[[R:.+]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%arg2, %{{.+}}, %arg0) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// AVX512-NOT: multi_reduction
// AVX512: return %[[R]]
// AVX-VNNI has no 512-bit form: left as it is.
// AVXVNNI-LABEL: func.func @unsigned_times_signed
// AVXVNNI: vector.multi_reduction
// NONE-LABEL: func.func @unsigned_times_signed
// NONE: vector.multi_reduction
func.func @unsigned_times_signed(%a: vector<64xi8>, %q: vector<64xi8>, %acc: vector<16xi32>) -> vector<16xi32> {
  %m = arith.constant dense<15> : vector<64xi8>
  %n = arith.andi %q, %m : vector<64xi8>
  %x = arith.extsi %a : vector<64xi8> to vector<64xi32>
  %y = arith.extsi %n : vector<64xi8> to vector<64xi32>
  %p = arith.muli %x, %y : vector<64xi32>
  %g = vector.shape_cast %p : vector<64xi32> to vector<16x4xi32>
  %r = vector.multi_reduction <add>, %g, %acc [1] : vector<16x4xi32> to vector<16xi32>
  return %r : vector<16xi32>
}

// Two signed operands: a * b = (a ^ 0x80) * b - 128 * b, both unsigned x
// signed; the offset 128 * b is taken off the accumulator before the dot
// (with a zero accumulator it is then shared by every product with b).
// AVX512-LABEL: func.func @signed_times_signed
// AVX512: %[[F:.+]] = arith.xori %arg0, %{{.+}} : vector<32xi8>
// AVX512: %[[O:.+]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%{{.+}}, %{{.+}}, %arg1)
// AVX512: %[[A:.+]] = arith.subi %arg2, %[[O]] : vector<8xi32>
// AVX512: %[[S:.+]] = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%[[A]], %[[F]], %arg1)
// AVX512: return %[[S]]
// AVXVNNI-LABEL: func.func @signed_times_signed
// AVXVNNI: llvm.call_intrinsic "llvm.x86.avxvnni.vpdpbusd.256"
// NONE-LABEL: func.func @signed_times_signed
// NONE-NOT: call_intrinsic
func.func @signed_times_signed(%a: vector<32xi8>, %b: vector<32xi8>, %acc: vector<8xi32>) -> vector<8xi32> {
  %x = arith.extsi %a : vector<32xi8> to vector<32xi32>
  %y = arith.extsi %b : vector<32xi8> to vector<32xi32>
  %p = arith.muli %x, %y : vector<32xi32>
  %g = vector.shape_cast %p : vector<32xi32> to vector<8x4xi32>
  %r = vector.multi_reduction <add>, %g, %acc [1] : vector<8x4xi32> to vector<8xi32>
  return %r : vector<8xi32>
}

// Not products of bytes: left to the generic lowering.
// AVX512-LABEL: func.func @wider
// AVX512: vector.multi_reduction
func.func @wider(%a: vector<32xi16>, %b: vector<32xi16>, %acc: vector<8xi32>) -> vector<8xi32> {
  %x = arith.extsi %a : vector<32xi16> to vector<32xi32>
  %y = arith.extsi %b : vector<32xi16> to vector<32xi32>
  %p = arith.muli %x, %y : vector<32xi32>
  %g = vector.shape_cast %p : vector<32xi32> to vector<8x4xi32>
  %r = vector.multi_reduction <add>, %g, %acc [1] : vector<8x4xi32> to vector<8xi32>
  return %r : vector<8xi32>
}
