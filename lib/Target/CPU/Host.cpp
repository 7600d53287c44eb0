//===- Host.cpp - describe the CPU this process runs on -------------------===//
//
// The only place in llmc that probes the host: drivers call it (through
// resolveTarget("cpu")) once, and everything below them sees the explicit
// description it returns.
//
//===----------------------------------------------------------------------===//
#include "Target/TargetDescription.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"
#include "llvm/TargetParser/Host.h"

#include <thread>

using namespace llmc;

/// The size of the level-`level` data (or unified) cache of cpu0 from
/// Linux sysfs, or nullopt.
static std::optional<int64_t> sysfsCache(unsigned level) {
  for (unsigned index = 0; index < 8; ++index) {
    std::string dir =
        "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    auto read = [&](const char *file) -> std::string {
      // sysfs files report a size they do not have: read them as streams.
      auto buf = llvm::MemoryBuffer::getFileAsStream(dir + "/" + file);
      return buf ? (*buf)->getBuffer().trim().str() : std::string();
    };
    std::string lvl = read("level");
    if (lvl.empty())
      break;
    std::string type = read("type");
    if (lvl != std::to_string(level) || type == "Instruction")
      continue;
    std::string text = read("size");
    llvm::StringRef size = text;
    int64_t unit = 1;
    if (size.consume_back("K"))
      unit = 1024;
    else if (size.consume_back("M"))
      unit = 1024 * 1024;
    int64_t n;
    if (!size.getAsInteger(10, n) && n > 0)
      return n * unit;
  }
  return std::nullopt;
}

TargetDescription llmc::detectHostTarget() {
  TargetDescription t;
  t.kind = TargetKind::CPU;
  t.name = llvm::sys::getHostCPUName().str();
  if (t.name.empty() || t.name == "generic")
    t.name = "x86-64";
  // The host's features as changes to its CPU name's own set: what a VM
  // hides, or what a newer stepping adds.
  llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  auto named = TargetDescription::parse("cpu:" + t.name);
  std::vector<std::string> keys;
  for (auto &e : host)
    keys.push_back(e.first().str());
  llvm::sort(keys);
  for (const std::string &f : keys) {
    bool on = host.lookup(f);
    bool inName = named && named->has(f);
    if (on != inName)
      t.featureChanges.push_back({f, on});
  }
  if (!named)
    llvm::consumeError(named.takeError());
  int physical = llvm::get_physical_cores();
  t.cores = physical > 0 ? physical
                         : std::max(1u, std::thread::hardware_concurrency());
  if (auto l1 = sysfsCache(1))
    t.l1d = *l1;
  if (auto l2 = sysfsCache(2))
    t.l2 = *l2;
  if (auto l3 = sysfsCache(3))
    t.l3 = *l3;
  return t;
}
