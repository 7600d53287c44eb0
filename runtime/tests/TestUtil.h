//===- TestUtil.h - Helpers shared by the runtime unit tests ----*- C++ -*-===//
//
// Temporary directories and file helpers, and where to find the shared models.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_TESTS_TESTUTIL_H
#define LLMC_RUNTIME_TESTS_TESTUTIL_H

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace llmc::test {

/// A fresh directory under $TMPDIR, removed with its contents on destruction.
class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/llmc-rt-test-XXXXXX";
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("mkdtemp failed");
    dir = pattern;
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + dir + "'";
    (void)!std::system(cmd.c_str());
  }
  const std::string &path() const { return dir; }
  std::string file(const std::string &name) const { return dir + "/" + name; }

private:
  std::string dir;
};

/// Writes `data` to `path`, replacing it.
inline void writeFile(const std::string &path, const std::string &data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

/// Reads a whole file.
inline std::string readWholeFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

/// The folder with the shared test models: $LLMC_MODELS_DIR, else the
/// project's ../shared/models, as baked in by CMake.
inline std::string modelsDir() {
  if (const char *env = std::getenv("LLMC_MODELS_DIR"); env && *env)
    return env;
#ifdef LLMC_DEFAULT_MODELS_DIR
  return LLMC_DEFAULT_MODELS_DIR;
#else
  return "";
#endif
}

} // namespace llmc::test

#endif // LLMC_RUNTIME_TESTS_TESTUTIL_H
