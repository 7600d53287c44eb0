//===- TargetDescription.cpp - parse and print target descriptions --------===//
//
// A CPU's feature set comes from LLVM's own tables (MCSubtargetInfo), so the
// description agrees with the code generator on what "znver4" or
// "x86-64-v3,+avx512f" means; cache sizes and core counts, which no CPU name
// fixes, are explicit keys with per-family defaults.
//
//===----------------------------------------------------------------------===//
#include "Target/TargetDescription.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"

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

/// "32K" / "1M" / "1048576" in bytes.
static std::string sizeString(int64_t bytes) {
  if (bytes == 0)
    return "0";
  if (bytes % (1024 * 1024) == 0)
    return std::to_string(bytes / (1024 * 1024)) + "M";
  if (bytes % 1024 == 0)
    return std::to_string(bytes / 1024) + "K";
  return std::to_string(bytes);
}

std::string TargetDescription::str() const {
  std::string s = kind == TargetKind::CPU    ? "cpu"
                  : kind == TargetKind::CUDA ? "cuda"
                                             : "vulkan";
  if (!name.empty())
    s += ":" + name;
  if (kind != TargetKind::CPU)
    return s;
  for (auto &[f, on] : featureChanges)
    s += std::string(",") + (on ? "+" : "-") + f;
  s += llvm::formatv(",cores={0},l1d={1},l2={2},l3={3}", cores,
                     sizeString(l1d), sizeString(l2), sizeString(l3))
           .str();
  if (prefetch != kDefaultPrefetch)
    s += ",prefetch=" + sizeString(prefetch);
  return s;
}

/// Parses "32K", "1M", "1MiB" or a byte count.
static std::optional<int64_t> parseSize(llvm::StringRef v,
                                        bool zeroOk = false) {
  int64_t unit = 1;
  if (v.consume_back_insensitive("ib") || v.consume_back_insensitive("b")) {
  }
  if (v.consume_back_insensitive("k"))
    unit = 1024;
  else if (v.consume_back_insensitive("m"))
    unit = 1024 * 1024;
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
  if (t.kind == TargetKind::Vulkan && !name.empty())
    return llvm::createStringError("target '" + spec.str() +
                                   "': vulkan takes no name");
  if (t.kind == TargetKind::CPU)
    defaultCaches(t);
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
    } else {
      return llvm::createStringError(
          "target '" + spec.str() + "': bad item '" + item.str() +
          "' (expected +feature, -feature, cores=N, l1d=SIZE, l2=SIZE, "
          "l3=SIZE or prefetch=SIZE)");
    }
  }
  if (t.kind == TargetKind::CPU)
    if (llvm::Error e = deriveCPU(t, spec))
      return std::move(e);
  return t;
}

llvm::Expected<TargetDescription> llmc::resolveTarget(llvm::StringRef spec) {
  auto [head, rest] = spec.split(',');
  if (head != "cpu" && head != "host")
    return TargetDescription::parse(spec);
  // The host, with any items given after it applied on top (later items
  // win): "cpu,cores=1".
  std::string explicitSpec = detectHostTarget().str();
  if (!rest.empty())
    explicitSpec += "," + rest.str();
  return TargetDescription::parse(explicitSpec);
}
