// RUN: llm-opt %s -cpu-expand-exp | FileCheck %s

// f32 exp, scalar or vector, becomes ggml_v_expf's arithmetic: n = round(x
// / ln 2) by the 1.5 * 2^23 trick, a two-step Cody-Waite reduction, the
// polynomial in fused multiply-adds, and 2^n applied in two exact scalings
// (0 or infinity past |n| > 192). f64 exp is left to libm.
// CHECK-LABEL: func.func @scalar
// CHECK-NOT: math.exp
// CHECK: %[[Z:.+]] = math.fma %{{.+}}, %cst{{.*}}, %cst{{.*}} : f32
// CHECK: arith.subf %[[Z]]
// CHECK: arith.fptosi %{{.+}} : f32 to i32
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.+}} : i32 to f32
// CHECK: arith.select
func.func @scalar(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// CHECK-LABEL: func.func @vector
// CHECK-NOT: math.exp
// CHECK: math.fma %{{.+}} : vector<16xf32>
// CHECK: arith.bitcast %{{.+}} : vector<16xi32> to vector<16xf32>
func.func @vector(%x: vector<16xf32>) -> vector<16xf32> {
  %0 = math.exp %x : vector<16xf32>
  return %0 : vector<16xf32>
}

// CHECK-LABEL: func.func @f64
// CHECK: math.exp %{{.+}} : f64
func.func @f64(%x: f64) -> f64 {
  %0 = math.exp %x : f64
  return %0 : f64
}
