// RUN: llm-opt %s -cpu-profile-kernels -split-input-file -verify-diagnostics | FileCheck %s

// Every call of a kernel the module lists reads the clock before and after
// and adds the nanoseconds and one call to the slot of the kernel and its
// caller (their place in llmc.kernels) of two exported arrays, whose length
// an exported constant states; other calls stay as they are. A kernel that
// two functions call has a slot for each.
// CHECK-LABEL: func.func @f
// CHECK: %[[T0:.+]] = call @llmc_profile_clock() : () -> i64
// CHECK-NEXT: call @f.scale
// CHECK-NEXT: %[[T1:.+]] = call @llmc_profile_clock() : () -> i64
// CHECK-NEXT: %[[SLOT:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[NS:.+]] = arith.subi %[[T1]], %[[T0]] : i64
// CHECK-NEXT: %[[A:.+]] = memref.get_global @llmc_profile_ns : memref<3xi64>
// CHECK-NEXT: %[[OLD:.+]] = memref.load %[[A]][%[[SLOT]]]
// CHECK-NEXT: %[[NEW:.+]] = arith.addi %[[OLD]], %[[NS]]
// CHECK-NEXT: memref.store %[[NEW]], %[[A]][%[[SLOT]]]
// CHECK: memref.get_global @llmc_profile_calls
// CHECK: call @llmc_profile_clock
// CHECK-NEXT: call @f.scale
// CHECK-NEXT: call @llmc_profile_clock
// CHECK-NOT: llmc_profile_clock
// CHECK: call @helper() : () -> ()
// CHECK-NEXT: return
// CHECK-LABEL: func.func @g
// CHECK: call @llmc_profile_clock
// CHECK-NEXT: call @f.scale
// CHECK-NEXT: call @llmc_profile_clock
// CHECK-NEXT: arith.constant 2 : index
// CHECK: memref.global "public" @llmc_profile_ns : memref<3xi64> = dense<0>
// CHECK: memref.global "public" @llmc_profile_calls : memref<3xi64> = dense<0>
// CHECK: memref.global "public" constant @llmc_profile_count : memref<1xi64> = dense<3>
// The monotonic clock (CLOCK_MONOTONIC = 1) in nanoseconds.
// CHECK: func.func private @llmc_profile_clock() -> i64
// CHECK: %[[TS:.+]] = llvm.alloca
// CHECK: call @clock_gettime(%{{.+}}, %[[TS]])
module attributes {llmc.kernels = [{name = "f.other", caller = "f"}, {name = "f.scale", caller = "f"}, {name = "f.scale", caller = "g"}]} {
  func.func @f(%x: memref<8xf32>) {
    call @f.scale(%x) : (memref<8xf32>) -> ()
    call @f.scale(%x) : (memref<8xf32>) -> ()
    call @helper() : () -> ()
    return
  }
  func.func @g(%x: memref<8xf32>) {
    call @f.scale(%x) : (memref<8xf32>) -> ()
    return
  }
  func.func private @f.scale(%x: memref<8xf32>) attributes {llmc.kernel} {
    return
  }
  func.func private @helper() {
    return
  }
}

// -----

// expected-error @below {{cpu-profile-kernels: the module has no llmc.kernels (run tl-estimate-cost first)}}
module {
}

// -----

// expected-error @below {{cpu-profile-kernels: the module already defines llmc_profile_ns}}
module attributes {llmc.kernels = []} {
  memref.global "public" @llmc_profile_ns : memref<1xi64> = dense<0>
}

// -----

// expected-error @below {{cpu-profile-kernels: llmc.kernels[0] is not a dictionary with a name and a caller}}
module attributes {llmc.kernels = [{name = "f.scale"}]} {
}
