//===- CommandOptions.h - Option parsing for llmc run / bench ---*- C++ -*-===//
//
// The small command-line scanner shared by RunCommand.cpp and BenchCommand.cpp.
// It avoids llvm::cl so that both commands link without LLVM, and it is strict:
// unknown flags, missing values and malformed numbers are errors that name the
// option.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_TOOLS_LLMC_COMMANDOPTIONS_H
#define LLMC_TOOLS_LLMC_COMMANDOPTIONS_H

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::cli {

/// A user error; printed as "llmc: error: <subject>: <message>".
class CommandError : public std::runtime_error {
public:
  CommandError(const std::string &subject, const std::string &message)
      : std::runtime_error(subject + ": " + message) {}
};

/// Prints "llmc: error: <what>" to stderr and returns the exit code 1.
inline int reportError(const std::string &what) {
  std::fflush(stdout);
  std::fprintf(stderr, "llmc: error: %s\n", what.c_str());
  return 1;
}

/// One option occurrence: the flag as written before any '=' ("--seed") and
/// its value (empty for a boolean flag).
struct Option {
  std::string name;
  std::string value;
};

/// Splits argv[1..] into options and positional arguments. `valued` lists
/// the flags that take a value ("--seed 3" or "--seed=3"), `flags` those
/// that do not. Anything else starting with '-' is an unknown option; after
/// "--" everything is positional.
inline void scanArguments(int argc, char **argv,
                          const std::set<std::string> &valued,
                          const std::set<std::string> &flags,
                          std::vector<Option> &options,
                          std::vector<std::string> &positional) {
  const std::string command = argc > 0 ? argv[0] : "llmc";
  bool onlyPositional = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (onlyPositional || arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      onlyPositional = true;
      continue;
    }
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq);
    if (valued.count(name)) {
      if (eq != std::string::npos) {
        options.push_back({name, arg.substr(eq + 1)});
      } else if (i + 1 < argc) {
        options.push_back({name, argv[++i]});
      } else {
        throw CommandError(name, "missing value");
      }
    } else if (flags.count(name)) {
      if (eq != std::string::npos)
        throw CommandError(name, "takes no value");
      options.push_back({name, ""});
    } else {
      throw CommandError(name, "unknown option for llmc " + command);
    }
  }
}

/// Parses a decimal integer in [min, max]; the whole text must be a number.
inline int64_t parseInteger(const Option &o, int64_t min, int64_t max,
                            const char *expected) {
  const std::string &s = o.value;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < min ||
      v > max)
    throw CommandError(o.name, std::string("expected ") + expected + ", got '" +
                                   s + "'");
  return v;
}

/// Parses an unsigned 64-bit integer (a seed).
inline uint64_t parseUnsigned(const Option &o) {
  const std::string &s = o.value;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw CommandError(o.name,
                       "expected a non-negative integer, got '" + s + "'");
  return v;
}

/// Parses a finite decimal number in [min, max] (minOpen: excluding min).
inline double parseNumber(const Option &o, double min, double max, bool minOpen,
                          const char *expected) {
  const std::string &s = o.value;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  bool ok = !s.empty() && ec == std::errc() && end == s.data() + s.size() &&
            std::isfinite(v) && (minOpen ? v > min : v >= min) && v <= max;
  if (!ok)
    throw CommandError(o.name, std::string("expected ") + expected + ", got '" +
                                   s + "'");
  return v;
}

/// Parses a comma-separated list of token ids in [0, vocabSize).
inline std::vector<int32_t> parseIdList(const Option &o, int64_t vocabSize) {
  std::vector<int32_t> ids;
  std::string_view rest = o.value;
  if (rest.empty())
    throw CommandError(o.name, "expected a comma-separated list of token ids");
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw CommandError(o.name, "expected a comma-separated list of token "
                                 "ids, got '" +
                                     o.value + "'");
    if (v < 0 || v >= vocabSize)
      throw CommandError(o.name, "token id " + std::to_string(v) +
                                     " is outside [0, " +
                                     std::to_string(vocabSize) + ")");
    ids.push_back(static_cast<int32_t>(v));
    if (comma == std::string_view::npos)
      break;
    rest.remove_prefix(comma + 1);
  }
  return ids;
}

/// `--device N`: the Vulkan device a vulkan artifact opens (the runtime reads
/// LLMC_DEVICE).
inline void selectDevice(const Option &o) {
  ::setenv("LLMC_DEVICE",
           std::to_string(parseInteger(o, 0, 1000, "a device number")).c_str(),
           1);
}

/// Returns the only positional argument (the artifact directory).
inline std::string artifactDir(const std::vector<std::string> &positional,
                               const char *command) {
  if (positional.empty())
    throw CommandError(std::string("llmc ") + command,
                       "no artifact directory given");
  if (positional.size() > 1)
    throw CommandError(std::string("llmc ") + command,
                       "unexpected argument '" + positional[1] + "'");
  return positional[0];
}

/// Runs `body` on an opened `model` (llmc::Model) the way every rank of a
/// sharded one must: ranks other than 0 print nothing (their stdout goes
/// to /dev/null), and an error on this rank alone marks the model failed,
/// so that closing it ends the job rather than leave the other ranks
/// waiting in its collectives. For a model that is not sharded, just
/// `body()`.
template <typename Model, typename Body>
int onEveryRank(Model &model, Body body) {
  try {
    if (model.rank() != 0 && !std::freopen("/dev/null", "w", stdout))
      throw CommandError("/dev/null", "cannot open for writing");
    return body();
  } catch (const std::exception &e) {
    model.markFailed(e.what());
    throw;
  }
}

} // namespace llmc::cli

#endif // LLMC_TOOLS_LLMC_COMMANDOPTIONS_H
