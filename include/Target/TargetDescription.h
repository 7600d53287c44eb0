//===- TargetDescription.h - what llmc knows about a target -----*- C++ -*-===//
//
// The one description of the machine llmc compiles for, built once from the
// `--target` string at the top of the pipeline and handed down to every pass
// that makes a target decision (the default schedule, the back end's
// lowering and code emission). Nothing below the driver probes the host:
// `cpu` (this host) is resolved into an explicit description by
// resolveTarget(), which the drivers call; passes only parse explicit ones.
//
// Spelling (docs/design.md, "Targets"):
//
//   cpu                         this host (drivers only)
//   cpu:NAME[+feat|-feat]...[,key=value]...
//                               an LLVM x86 CPU name (znver4, x86-64-v3,
//                               sapphirerapids, ...) with feature changes
//   vulkan[:VERSION][+feat|-feat]...[,key=value]...
//                               a Vulkan device (VERSION 1.2 or 1.3)
//   cuda:sm_NN[,key=value]...   an NVIDIA GPU of that SM architecture
//   cuda                        this machine's CUDA device (drivers only)
//
// CPU keys: cores=N, l1d=SIZE, l2=SIZE, l3=SIZE, prefetch=SIZE (SIZE in
// bytes, or with K/M), prefetch_level=1|2|3. GPU keys: subgroup=N (threads in
// lockstep), workgroup=N (most threads in a workgroup), shared=SIZE (workgroup
// memory), range=SIZE (the most bytes one kernel argument may span); GPU
// features: fp16, int8, fp64, int64 (arithmetic and storage of those
// types), mma (matrix units: tensor cores; CUDA only, on by default there).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TARGET_TARGETDESCRIPTION_H
#define LLMC_TARGET_TARGETDESCRIPTION_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

enum class TargetKind { CPU, Vulkan, CUDA };

/// Facts about one compilation target. Derived facts (vector width, dot
/// product instructions) follow from the CPU name and features; sizes that
/// no name implies (caches, cores) are explicit or defaulted.
struct TargetDescription {
  TargetKind kind = TargetKind::CPU;
  /// CPU: the LLVM CPU name; CUDA: the SM architecture ("sm_90").
  std::string name;
  /// Feature changes relative to the CPU's own set, in the order given
  /// (LLVM feature names: "avx512f", "avxvnni", ...).
  std::vector<std::pair<std::string, bool>> featureChanges;
  /// Physical cores the generated code may use by default; on a GPU its
  /// compute units (SMs), the workgroups one wave of a launch runs at once
  /// (`cores=N`; a CUDA architecture's data-centre part by default, 1 on
  /// Vulkan).
  unsigned cores = 1;
  /// Data cache sizes in bytes (per core for L1/L2).
  int64_t l1d = 32 * 1024, l2 = 1024 * 1024, l3 = 8 * 1024 * 1024;
  /// How far ahead (bytes) a core fetches a stream it reads once (the
  /// weights in decode): about the memory's latency times one core's share
  /// of its rate; 0: no software prefetch. Printed when not the default.
  static constexpr int64_t kDefaultPrefetch = 8 * 1024;
  int64_t prefetch = kDefaultPrefetch;
  /// The cache level those prefetches fill (1: L1, 2: L2, 3: the last
  /// level). L2 by default: a core keeps few L1 misses in flight (Intel's
  /// 16 fill buffers), each held for the memory's whole latency by a
  /// prefetch into L1, where L2 tracks about three times as many, and the
  /// line moves from L2 to L1 on use within the core's reorder window.
  /// Printed when not the default.
  static constexpr int kDefaultPrefetchLevel = 2;
  int prefetchLevel = kDefaultPrefetchLevel;
  /// The cache line in bytes.
  int64_t cacheLine = 64;

  //===--- GPU targets --------------------------------------------------===//
  /// Threads that run in lockstep (Vulkan's subgroup size, a CUDA warp).
  unsigned subgroupSize = 32;
  /// The most threads one workgroup (CUDA block) may have.
  unsigned maxWorkgroupSize = 256;
  /// Workgroup (shared) memory per workgroup in bytes.
  int64_t sharedMemory = 16 * 1024;
  /// The most bytes one kernel argument may span (Vulkan's
  /// maxStorageBufferRange; 2^27 is what every Vulkan device offers).
  int64_t maxBufferRange = int64_t(1) << 27;
  /// The device runs workgroups on a CPU's cores (Vulkan's device type CPU:
  /// lavapipe, SwiftShader): its workgroup memory is ordinary cached
  /// memory, so staging tiles there only adds copies and barriers.
  /// Spelled device=cpu (device=gpu, the default, is not printed).
  bool cpuDevice = false;
  /// The widest load one GPU thread issues (bytes): CUDA's 16
  /// (ld.global.v4.b32); 0 where vector loads are not lowered (Vulkan).
  /// Derived from the kind.
  int64_t gpuLoadBytes = 0;

  //===--- derived (set by parse) -------------------------------------===//
  /// Every feature the CPU has, implied ones included.
  llvm::StringMap<bool> features;
  /// The widest SIMD register in bits (128, 256 or 512) and how many.
  unsigned vectorBits = 128;
  unsigned vectorRegisters = 16;

  bool has(llvm::StringRef feature) const { return features.lookup(feature); }
  /// Fused multiply-add.
  bool hasFMA() const { return has("fma") || has("avx512f"); }
  /// F16 <-> F32 conversions in registers.
  bool hasF16C() const { return has("f16c"); }
  /// VDPBF16PS: bf16 pair dot products into f32.
  bool hasBF16Dot() const { return has("avx512bf16"); }
  /// VPDPBUSD: u8 x s8 dot products of 4 into i32, at `bits` width.
  bool hasInt8Dot(unsigned bits) const {
    if (bits == 512)
      return has("avx512vnni");
    return has("avxvnni") || (has("avx512vnni") && has("avx512vl"));
  }
  /// A GPU target (its loops are mapped onto workgroups and threads).
  bool isGPU() const { return kind != TargetKind::CPU; }
  /// GPU arithmetic and storage of f16, i8, f64, i64 values.
  bool hasGPUFloat16() const { return has("fp16"); }
  bool hasGPUInt8() const { return has("int8"); }
  bool hasGPUFloat64() const { return has("fp64"); }
  bool hasGPUInt64() const { return has("int64"); }
  /// Matrix units that multiply f16 tiles in one subgroup (NVIDIA's tensor
  /// cores, through WMMA).
  bool hasMatrixUnits() const { return has("mma"); }
  /// Programmatic dependent launch: each kernel waits for the one before
  /// (griddepcontrol) and lets the next start early (CUDA, sm_90 and
  /// newer; `-pdl` turns it off).
  bool hasDependentLaunch() const { return has("pdl"); }
  /// Copies from global into shared memory that bypass the registers
  /// (`async-copy`: CUDA's cp.async, sm_80 and newer; `-async-copy` turns it
  /// off): a workgroup's staged tiles are copied so.
  bool hasAsyncCopy() const { return has("async-copy"); }
  /// Whether a prompt's f16 matmuls go to the GEMM library (`cublas`:
  /// cuBLAS, off by default): the GPU schedule marks them kind `library`.
  bool hasGemmLibrary() const { return has("cublas"); }
  /// Lanes of `elementBits`-wide elements in one vector register.
  unsigned lanes(unsigned elementBits) const {
    return vectorBits / elementBits;
  }
  /// The f32 lanes the CPU schedules vectorize by (at least 4): also the
  /// KV cache's blocks of positions (graph-kv-layout), which p.V's lanes
  /// must read whole.
  unsigned f32Lanes() const { return std::max(4u, lanes(32)); }
  /// The LLVM target triple.
  std::string triple() const;
  /// The feature string for LLVM's TargetMachine ("+avx2,-avx512f,...").
  std::string llvmFeatures() const;

  /// The canonical spelling; parse(str()) gives the same description.
  std::string str() const;

  /// Parses an explicit description. `cpu` alone (the host) is refused: the
  /// driver resolves it with resolveTarget().
  static llvm::Expected<TargetDescription> parse(llvm::StringRef spec);
};

/// parse(), except that `cpu` (or `host`) describes the machine this process
/// runs on. Only drivers (llmc, llm-opt, the Python module) call this.
llvm::Expected<TargetDescription> resolveTarget(llvm::StringRef spec);

/// The host CPU as an explicit description (lib/Target/CPU/Host.cpp).
TargetDescription detectHostTarget();

} // namespace llmc

#endif // LLMC_TARGET_TARGETDESCRIPTION_H
