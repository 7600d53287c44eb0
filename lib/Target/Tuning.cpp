//===- Tuning.cpp - measured schedule choices, per kernel -----------------===//
#include "Target/Tuning.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace llmc;

std::string ScheduleChoice::str() const {
  return "r" + std::to_string(reductionShare) + "c" +
         std::to_string(chunkShare) +
         (prefetchKiB >= 0 ? "p" + std::to_string(prefetchKiB) : "") +
         (decodeRows > 0 ? "t" + std::to_string(decodeRows) : "");
}

std::optional<ScheduleChoice> ScheduleChoice::parse(llvm::StringRef s) {
  ScheduleChoice c;
  unsigned r = 0, k = 0, p = 0;
  if (!s.consume_front("r") || s.consumeInteger(10, r) ||
      !s.consume_front("c") || s.consumeInteger(10, k) || r > 64 || k > 64)
    return std::nullopt;
  if (s.consume_front("p")) {
    if (s.consumeInteger(10, p) || p > 1024)
      return std::nullopt;
    c.prefetchKiB = static_cast<int>(p);
  }
  if (s.consume_front("t")) {
    unsigned t = 0;
    if (s.consumeInteger(10, t) || (t != 1 && t != 2 && t != 4))
      return std::nullopt;
    c.decodeRows = static_cast<int>(t);
  }
  if (!s.empty())
    return std::nullopt;
  c.reductionShare = static_cast<int>(r);
  c.chunkShare = static_cast<int>(k);
  return c;
}

std::vector<ScheduleChoice> llmc::tuneCandidates() {
  // The rule first; the cache blocking's alternatives (prefill), then the
  // prefetch distance's and the GEMV's rows a step (decode).
  return {{2, 2, -1}, {0, 2, -1}, {4, 2, -1}, {2, 0, -1},
          {2, 4, -1}, {0, 0, -1}, {2, 2, 0},  {2, 2, 4},
          {2, 2, 16}, {2, 2, -1, 1}, {2, 2, 0, 1}};
}

ScheduleChoice Tuning::lookup(llvm::StringRef key) const {
  if (all)
    return *all;
  auto it = choices.find(key.str());
  return it == choices.end() ? ScheduleChoice() : it->second;
}

std::string Tuning::str() const {
  if (all)
    return "*=" + all->str();
  std::string s;
  for (auto &[key, choice] : choices)
    s += (s.empty() ? "" : ";") + key + "=" + choice.str();
  return s;
}

llvm::Expected<Tuning> Tuning::parse(llvm::StringRef s) {
  Tuning t;
  llvm::SmallVector<llvm::StringRef> items;
  s.split(items, ';', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [key, value] = item.split('=');
    std::optional<ScheduleChoice> c = ScheduleChoice::parse(value);
    if (key.empty() || !c)
      return llvm::createStringError(
          "tuning: expected KEY=r<R>c<C>[p<P>][t<T>] (or *=...), got '" + item.str() +
          "'");
    if (key == "*")
      t.all = *c;
    else
      t.choices[key.str()] = *c;
  }
  return t;
}

std::string llmc::defaultTuneCachePath() {
  if (const char *env = std::getenv("LLMC_TUNE_CACHE"); env && *env)
    return env;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    path = xdg;
  } else {
    const char *home = std::getenv("HOME");
    path = home ? home : ".";
    llvm::sys::path::append(path, ".cache");
  }
  llvm::sys::path::append(path, "llmc", "tune.json");
  return std::string(path);
}

static llvm::Error cacheError(llvm::StringRef path, const llvm::Twine &msg) {
  return llvm::createStringError(path.str() + ": " + msg.str());
}

llvm::Expected<std::vector<TuneEntry>>
llmc::readTuneCache(llvm::StringRef path) {
  std::vector<TuneEntry> entries;
  if (!llvm::sys::fs::exists(path))
    return entries;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return cacheError(path, "cannot read: " + buffer.getError().message());
  auto json = llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return cacheError(path, "not JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *root = json->getAsObject();
  if (!root || root->getString("format") != "llmc-tune")
    return cacheError(path, "not an llmc tune cache (format \"llmc-tune\")");
  if (root->getInteger("version") != 1)
    return cacheError(path, "unsupported version (this llmc reads 1)");
  const llvm::json::Array *list = root->getArray("entries");
  if (!list)
    return cacheError(path, "field 'entries' must be an array");
  for (auto [i, value] : llvm::enumerate(*list)) {
    std::string field = llvm::formatv("entries[{0}]", i).str();
    const llvm::json::Object *e = value.getAsObject();
    auto target = e ? e->getString("target") : std::nullopt;
    auto key = e ? e->getString("key") : std::nullopt;
    auto choice = e ? e->getString("choice") : std::nullopt;
    if (!target || !key || !choice)
      return cacheError(path, "field '" + field +
                                  "' must be an object with strings target, "
                                  "key and choice");
    std::optional<ScheduleChoice> c = ScheduleChoice::parse(*choice);
    if (!c)
      return cacheError(path, "field '" + field + ".choice' is \"" + *choice +
                                  "\", expected r<R>c<C>[p<P>][t<T>]");
    TuneEntry &t = entries.emplace_back();
    t.target = target->str();
    t.key = key->str();
    t.choice = *c;
    t.ms = e->getNumber("ms").value_or(0);
    t.defaultMs = e->getNumber("default_ms").value_or(0);
  }
  return entries;
}

Tuning llmc::tuningFor(llvm::ArrayRef<TuneEntry> entries,
                       llvm::StringRef target) {
  Tuning t;
  for (const TuneEntry &e : entries)
    if (e.target == target)
      t.choices[e.key] = e.choice;
  return t;
}

llvm::Error llmc::writeTuneCache(llvm::StringRef path,
                                 llvm::ArrayRef<TuneEntry> entries) {
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (!dir.empty())
    if (auto ec = llvm::sys::fs::create_directories(dir))
      return cacheError(dir, "cannot create: " + ec.message());
  std::string tmp = (path + ".tmp").str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec, llvm::sys::fs::OF_Text);
    if (ec)
      return cacheError(tmp, "cannot write: " + ec.message());
    llvm::json::OStream j(os, 2);
    j.object([&] {
      j.attribute("format", "llmc-tune");
      j.attribute("version", 1);
      j.attributeArray("entries", [&] {
        for (const TuneEntry &e : entries)
          j.object([&] {
            j.attribute("target", e.target);
            j.attribute("key", e.key);
            j.attribute("choice", e.choice.str());
            j.attribute("ms", e.ms);
            j.attribute("default_ms", e.defaultMs);
          });
      });
    });
    os << "\n";
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(tmp);
      return cacheError(tmp, "write failed");
    }
  }
  if (auto ec = llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return cacheError(path, "cannot replace: " + ec.message());
  }
  return llvm::Error::success();
}
