//===- TargetDescription.cpp - parse and print target descriptions --------===//
//
// A CPU's feature set comes from LLVM's own tables (MCSubtargetInfo), so the
// description agrees with the code generator on what "znver4" or
// "x86-64-v3,+avx512f" means; cache sizes and core counts, which no CPU name
// fixes, are explicit keys with per-family defaults.
//
//===----------------------------------------------------------------------===//
#include "Target/TargetDescription.h"
#include "llmc/runtime.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <cstdlib>
#include <memory>

using namespace llmc;

static constexpr const char *kCPUTriple = "x86_64-unknown-linux-gnu";

std::string TargetDescription::triple() const {
  return kind == TargetKind::CPU ? kCPUTriple
         : kind == TargetKind::CUDA ? "nvptx64-nvidia-cuda"
                                    : "spirv64-unknown-vulkan";
}

std::string TargetDescription::llvmFeatures() const {
  std::string s;
  for (auto &[f, on] : featureChanges)
    s += (s.empty() ? "" : ",") + std::string(on ? "+" : "-") + f;
  return s;
}

/// "32K" / "1M" / "1G" / "1048576" in bytes.
static std::string sizeString(int64_t bytes) {
  if (bytes == 0)
    return "0";
  if (bytes % (int64_t(1) << 30) == 0)
    return std::to_string(bytes >> 30) + "G";
  if (bytes % (1024 * 1024) == 0)
    return std::to_string(bytes / (1024 * 1024)) + "M";
  if (bytes % 1024 == 0)
    return std::to_string(bytes / 1024) + "K";
  return std::to_string(bytes);
}

/// The GPU features a kind has unless told otherwise.
/// The SM number of a CUDA target's name ("sm_90" -> 90; 0 when malformed,
/// which parse() refuses).
static unsigned smNumber(llvm::StringRef name) {
  unsigned sm = 0;
  if (!name.consume_front("sm_") || name.getAsInteger(10, sm))
    return 0;
  return sm;
}

/// The oldest SM with matrix units (Volta's tensor cores, WMMA).
static constexpr unsigned kFirstMatrixSM = 70;

/// The oldest SM with asynchronous copies into shared memory (Ampere's
/// cp.async).
static constexpr unsigned kFirstAsyncCopySM = 80;

/// The oldest SM with programmatic dependent launch (Hopper).
static constexpr unsigned kFirstPDLSM = 90;

static llvm::StringMap<bool> defaultGPUFeatures(TargetKind kind,
                                                llvm::StringRef name) {
  llvm::StringMap<bool> f;
  f["fp16"] = true;
  f["int8"] = true;
  f["fp64"] = kind == TargetKind::CUDA;
  f["int64"] = true;
  // Matrix units (tensor cores) that multiply tiles in one subgroup: every
  // SM from Volta's; Vulkan's (cooperative matrices) are not lowered.
  f["mma"] = kind == TargetKind::CUDA && smNumber(name) >= kFirstMatrixSM;
  // Programmatic dependent launch (Hopper's): a kernel may start while the
  // one before it ends, waiting (griddepcontrol) before it touches memory.
  f["pdl"] = kind == TargetKind::CUDA && smNumber(name) >= kFirstPDLSM;
  // Copies from global into shared memory that bypass the registers
  // (cp.async, Ampere's): a workgroup's staged tiles.
  f["async-copy"] =
      kind == TargetKind::CUDA && smNumber(name) >= kFirstAsyncCopySM;
  // A prompt's f16 products offloaded to cuBLAS (the toolkit's GEMM
  // library, which the runtime loads): off unless asked for.
  f["cublas"] = false;
  return f;
}
static constexpr const char *kGPUFeatures[] = {
    "fp16", "int8", "fp64", "int64", "mma", "pdl", "async-copy", "cublas"};

/// The SMs of the data-centre part of each CUDA architecture (V100 80, T4
/// 40, A100 108, A10 72, L40S 142, H100/H200 132, B200 148, RTX PRO 6000
/// 188; 1 for others): what a
/// schedule fills with workgroups where a model's own parallelism (its KV
/// heads) would not. `cores=N` states a device's own.
static unsigned defaultSMs(llvm::StringRef name) {
  switch (smNumber(name)) {
  case 70:
    return 80;
  case 75:
    return 40;
  case 80:
    return 108;
  case 86:
    return 72;
  case 89:
    return 142;
  case 90:
    return 132;
  case 100:
    return 148;
  case 120:
    return 188;
  default:
    return 1;
  }
}

std::string TargetDescription::str() const {
  std::string s = kind == TargetKind::CPU    ? "cpu"
                  : kind == TargetKind::CUDA ? "cuda"
                                             : "vulkan";
  if (!name.empty())
    s += ":" + name;
  if (isGPU()) {
    // Features where they differ from the kind's, in a fixed order.
    llvm::StringMap<bool> defaults = defaultGPUFeatures(kind, name);
    for (const char *f : kGPUFeatures)
      if (has(f) != defaults.lookup(f))
        s += std::string(",") + (has(f) ? "+" : "-") + f;
    s += llvm::formatv(",subgroup={0},workgroup={1},shared={2},range={3}",
                       subgroupSize, maxWorkgroupSize, sizeString(sharedMemory),
                       sizeString(maxBufferRange))
             .str();
    if (cores != (kind == TargetKind::CUDA ? defaultSMs(name) : 1))
      s += ",cores=" + std::to_string(cores);
    if (cpuDevice)
      s += ",device=cpu";
    return s;
  }
  for (auto &[f, on] : featureChanges)
    s += std::string(",") + (on ? "+" : "-") + f;
  s += llvm::formatv(",cores={0},l1d={1},l2={2},l3={3}", cores,
                     sizeString(l1d), sizeString(l2), sizeString(l3))
           .str();
  if (prefetch != kDefaultPrefetch)
    s += ",prefetch=" + sizeString(prefetch);
  if (prefetchLevel != kDefaultPrefetchLevel)
    s += ",prefetch_level=" + std::to_string(prefetchLevel);
  return s;
}

/// Parses "32K", "1M", "1MiB", "4G" or a byte count.
static std::optional<int64_t> parseSize(llvm::StringRef v,
                                        bool zeroOk = false) {
  int64_t unit = 1;
  if (v.consume_back_insensitive("ib") || v.consume_back_insensitive("b")) {
  }
  if (v.consume_back_insensitive("k"))
    unit = 1024;
  else if (v.consume_back_insensitive("m"))
    unit = 1024 * 1024;
  else if (v.consume_back_insensitive("g"))
    unit = int64_t(1) << 30;
  int64_t n;
  if (v.getAsInteger(10, n) || n < 0 || (n == 0 && !zeroOk))
    return std::nullopt;
  return n * unit;
}

/// Cache sizes the CPU families llmc knows are built with (per core L1d and
/// L2, L3 per chip or CCD); others get the defaults of the struct.
static void defaultCaches(TargetDescription &t) {
  llvm::StringRef n = t.name;
  if (n.starts_with("znver")) {
    t.l1d = n == "znver5" ? 48 * 1024 : 32 * 1024;
    t.l2 = n >= "znver4" ? 1024 * 1024 : 512 * 1024;
    t.l3 = 32 * 1024 * 1024;
  } else if (n == "sapphirerapids" || n == "emeraldrapids" ||
             n == "graniterapids") {
    t.l1d = 48 * 1024;
    t.l2 = 2 * 1024 * 1024;
    t.l3 = 32 * 1024 * 1024;
  } else if (n == "icelake-server" || n == "cascadelake" ||
             n == "skylake-avx512" || n == "cooperlake") {
    t.l1d = n == "icelake-server" ? 48 * 1024 : 32 * 1024;
    t.l2 = n == "icelake-server" ? 1280 * 1024 : 1024 * 1024;
    t.l3 = 32 * 1024 * 1024;
  }
}

static const llvm::Target *x86Target(std::string &error) {
  static bool init = [] {
    llvm::InitializeNativeTarget();
    return true;
  }();
  (void)init;
  return llvm::TargetRegistry::lookupTarget(llvm::Triple(kCPUTriple), error);
}

/// Fills the derived facts of a CPU description from LLVM's tables.
static llvm::Error deriveCPU(TargetDescription &t, llvm::StringRef spec) {
  std::string error;
  const llvm::Target *target = x86Target(error);
  if (!target)
    return llvm::createStringError("target '" + spec.str() +
                                   "': no x86 code generator: " + error);
  llvm::Triple triple(kCPUTriple);
  // Checked against the target parser first: MC warns on stderr about
  // names it does not know.
  std::unique_ptr<llvm::MCSubtargetInfo> base;
  if (llvm::X86::parseArchX86(t.name, /*Only64Bit=*/true) != llvm::X86::CK_None)
    base.reset(target->createMCSubtargetInfo(triple, t.name, ""));
  if (!base || !base->isCPUStringValid(t.name))
    return llvm::createStringError(
        "target '" + spec.str() + "': unknown CPU '" + t.name +
        "' (an LLVM x86 CPU name such as x86-64-v3, znver4, sapphirerapids)");
  for (auto &[f, on] : t.featureChanges) {
    bool known = llvm::any_of(base->getAllProcessorFeatures(),
                              [&](const llvm::SubtargetFeatureKV &kv) {
                                return f == kv.Key;
                              });
    if (!known)
      return llvm::createStringError("target '" + spec.str() +
                                     "': unknown CPU feature '" + f + "'");
  }
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, t.name, t.llvmFeatures()));
  t.features.clear();
  for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
    if (sti->checkFeatures(std::string("+") + kv.Key))
      t.features[kv.Key] = true;
  t.vectorBits = t.has("avx512f") ? 512 : t.has("avx") ? 256 : 128;
  t.vectorRegisters = t.has("avx512f") ? 32 : 16;
  return llvm::Error::success();
}

/// The items after a GPU target's kind: feature changes and limits.
static llvm::Expected<TargetDescription>
parseGPUItems(TargetDescription &t, llvm::StringRef spec,
              llvm::ArrayRef<llvm::StringRef> items) {
  auto bad = [&](llvm::StringRef item, llvm::StringRef why) {
    return llvm::createStringError("target '" + spec.str() + "': bad item '" +
                                   item.str() + "' (" + why.str() + ")");
  };
  for (llvm::StringRef item : items) {
    if (item.starts_with("+") || item.starts_with("-")) {
      llvm::StringRef f = item.drop_front();
      if (!llvm::is_contained(kGPUFeatures, f))
        return bad(item, "GPU features: fp16, int8, fp64, int64, mma, pdl, "
                         "async-copy, cublas");
      if (f == "mma" && item[0] == '+' && t.kind != TargetKind::CUDA)
        return bad(item, "matrix units are lowered for CUDA targets only");
      if (f == "pdl" && item[0] == '+' &&
          (t.kind != TargetKind::CUDA || smNumber(t.name) < kFirstPDLSM))
        return bad(item, "programmatic dependent launch is CUDA's, from "
                         "sm_90");
      if (f == "async-copy" && item[0] == '+' &&
          (t.kind != TargetKind::CUDA || smNumber(t.name) < kFirstAsyncCopySM))
        return bad(item, "asynchronous copies (cp.async) are CUDA's, from "
                         "sm_80");
      if (f == "cublas" && item[0] == '+' && t.kind != TargetKind::CUDA)
        return bad(item, "cuBLAS is a CUDA library");
      if (f == "mma" && item[0] == '+' && smNumber(t.name) < kFirstMatrixSM)
        return bad(item, "tensor cores start at sm_70");
      t.features[f] = item[0] == '+';
      continue;
    }
    auto [key, value] = item.split('=');
    if (key == "subgroup" || key == "workgroup") {
      unsigned n;
      if (value.getAsInteger(10, n) || n == 0 || !llvm::isPowerOf2_32(n) ||
          n > 1024)
        return bad(item, "a power of two up to 1024");
      (key == "subgroup" ? t.subgroupSize : t.maxWorkgroupSize) = n;
      continue;
    }
    if (key == "shared" || key == "range") {
      std::optional<int64_t> size = parseSize(value);
      if (!size)
        return bad(item, "a size in bytes, K or M");
      (key == "shared" ? t.sharedMemory : t.maxBufferRange) = *size;
      continue;
    }
    if (key == "cores") {
      if (value.getAsInteger(10, t.cores) || t.cores == 0)
        return bad(item, "the compute units (SMs), a positive number");
      continue;
    }
    if (key == "device") {
      if (value != "cpu" && value != "gpu")
        return bad(item, "cpu or gpu");
      t.cpuDevice = value == "cpu";
      continue;
    }
    return bad(item, "expected +feature, -feature, subgroup=N, workgroup=N, "
                     "shared=SIZE, range=SIZE, cores=N or device=cpu|gpu");
  }
  if (t.subgroupSize > t.maxWorkgroupSize)
    return llvm::createStringError("target '" + spec.str() +
                                   "': the subgroup is larger than a "
                                   "workgroup");
  return t;
}

llvm::Expected<TargetDescription>
TargetDescription::parse(llvm::StringRef spec) {
  TargetDescription t;
  llvm::SmallVector<llvm::StringRef> items;
  spec.split(items, ',');
  llvm::StringRef head = items.front();
  auto [kindName, name] = head.split(':');
  if (kindName == "cpu") {
    t.kind = TargetKind::CPU;
  } else if (kindName == "cuda") {
    t.kind = TargetKind::CUDA;
  } else if (kindName == "vulkan") {
    t.kind = TargetKind::Vulkan;
  } else {
    return llvm::createStringError(
        "unknown target '" + spec.str() +
        "' (expected cpu, cpu:NAME[,+feature|-feature|key=value]..., "
        "vulkan or cuda:sm_NN)");
  }
  t.name = name.str();
  if (t.kind == TargetKind::CPU && t.name.empty())
    return llvm::createStringError(
        "target 'cpu' (this host) must be resolved by the driver into an "
        "explicit description such as 'cpu:znver4'");
  if (t.kind == TargetKind::CUDA &&
      (!name.starts_with("sm_") || name.size() < 5 ||
       !llvm::all_of(name.drop_front(3), llvm::isDigit)))
    return llvm::createStringError("target '" + spec.str() +
                                   "': expected cuda:sm_NN (e.g. cuda:sm_90)");
  if (t.kind == TargetKind::Vulkan) {
    if (t.name.empty())
      t.name = "1.2";
    if (t.name != "1.2" && t.name != "1.3")
      return llvm::createStringError(
          "target '" + spec.str() +
          "': expected vulkan or vulkan:VERSION (1.2 or 1.3)");
  }
  if (t.kind == TargetKind::CPU)
    defaultCaches(t);
  if (t.isGPU()) {
    // The facts a device of the kind has at least: Vulkan's required
    // limits (and the fp16/int8 arithmetic desktop devices have), a CUDA
    // GPU's.
    t.features = defaultGPUFeatures(t.kind, t.name);
    if (t.kind == TargetKind::CUDA) {
      t.maxWorkgroupSize = 1024;
      t.sharedMemory = 48 * 1024;
      // The kernels index with 32 bits (the lowering's index width): a
      // binding spans at most 2 GiB, larger weights are read in windows.
      t.maxBufferRange = int64_t(1) << 31;
      t.gpuLoadBytes = 16;
      t.cores = defaultSMs(t.name);
    }
    return parseGPUItems(t, spec, llvm::drop_begin(items));
  }
  for (llvm::StringRef item : llvm::drop_begin(items)) {
    if (t.kind == TargetKind::CPU &&
        (item.starts_with("+") || item.starts_with("-"))) {
      if (item.size() < 2)
        return llvm::createStringError("target '" + spec.str() +
                                       "': empty feature name");
      t.featureChanges.push_back({item.drop_front().str(), item[0] == '+'});
      continue;
    }
    auto [key, value] = item.split('=');
    std::optional<int64_t> size = parseSize(value, key == "prefetch");
    int64_t *field = key == "l1d" ? &t.l1d
                     : key == "l2" ? &t.l2
                     : key == "l3" ? &t.l3
                     : key == "prefetch" ? &t.prefetch
                                   : nullptr;
    if (field && size) {
      *field = *size;
    } else if (key == "cores" && !value.getAsInteger(10, t.cores) &&
               t.cores > 0) {
    } else if (key == "prefetch_level" &&
               !value.getAsInteger(10, t.prefetchLevel) &&
               t.prefetchLevel >= 1 && t.prefetchLevel <= 3) {
    } else {
      return llvm::createStringError(
          "target '" + spec.str() + "': bad item '" + item.str() +
          "' (expected +feature, -feature, cores=N, l1d=SIZE, l2=SIZE, "
          "l3=SIZE, prefetch=SIZE or prefetch_level=1|2|3)");
    }
  }
  if (t.kind == TargetKind::CPU)
    if (llvm::Error e = deriveCPU(t, spec))
      return std::move(e);
  return t;
}

/// Vulkan device LLMC_DEVICE (else 0) as a description, or "" when there is
/// no loader or no such device.
static std::string describeVulkanDevice() {
  int32_t index = 0;
  if (const char *s = std::getenv("LLMC_DEVICE"))
    if (llvm::StringRef(s).getAsInteger(10, index))
      return "";
  char *out = nullptr, *error = nullptr;
  if (llmc_describe_device(index, &out, &error) != 0) {
    llmc_string_free(error);
    return "";
  }
  std::string desc = out;
  llmc_string_free(out);
  return desc;
}

/// CUDA device LLMC_DEVICE (else 0) as a description ("cuda:sm_90"), or an
/// error saying why there is none.
static llvm::Expected<std::string> describeCUDADevice() {
  int32_t index = 0;
  if (const char *s = std::getenv("LLMC_DEVICE"))
    if (llvm::StringRef(s).getAsInteger(10, index))
      return llvm::createStringError(std::string("LLMC_DEVICE: expected a "
                                                 "device number, got \"") +
                                     s + "\"");
  char *out = nullptr, *error = nullptr;
  if (llmc_describe_cuda_device(index, &out, &error) != 0) {
    std::string why = error ? error : "unknown error";
    llmc_string_free(error);
    return llvm::createStringError(
        "target 'cuda' describes this machine's CUDA device, and there is "
        "none (" +
        why + "); name the SM: cuda:sm_80, cuda:sm_90, ...");
  }
  std::string desc = out;
  llmc_string_free(out);
  return desc;
}

llvm::Expected<TargetDescription> llmc::resolveTarget(llvm::StringRef spec) {
  auto [head, rest] = spec.split(',');
  if (head == "cuda") {
    // The CUDA device of this machine (its SM; LLMC_DEVICE picks it), with
    // any items given after it applied on top.
    llvm::Expected<std::string> device = describeCUDADevice();
    if (!device)
      return device.takeError();
    if (!rest.empty())
      *device += "," + rest.str();
    return TargetDescription::parse(*device);
  }
  if (head == "vulkan") {
    // The Vulkan device this machine has (its version, features and
    // limits, LLMC_DEVICE picks it), with any items given after it applied
    // on top; without one, what every Vulkan device offers.
    std::string device = describeVulkanDevice();
    if (device.empty())
      return TargetDescription::parse(spec);
    if (!rest.empty())
      device += "," + rest.str();
    return TargetDescription::parse(device);
  }
  if (head != "cpu" && head != "host")
    return TargetDescription::parse(spec);
  // The host, with any items given after it applied on top (later items
  // win): "cpu,cores=1".
  std::string explicitSpec = detectHostTarget().str();
  if (!rest.empty())
    explicitSpec += "," + rest.str();
  return TargetDescription::parse(explicitSpec);
}
