//===- Collective.cpp - the ranks of a sharded model ----------------------===//
#include "Collective.h"

#include "Error.h"

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <unistd.h>
#include <vector>

namespace llmc::rt {

namespace {
constexpr size_t kErrLen = 1024;
/// The longest set-up limit (about 11 days; a finite wait).
constexpr double kMaxTimeout = 1e6;

/// The directory of `path`, with a trailing slash ("" for none).
std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

/// The directory of the running executable, with a trailing slash.
std::string executableDir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n <= 0 ? "" : dirOf(std::string(buf, n));
}

/// The directory of the program or shared object this runtime is linked
/// into (the Python module, a user's library), with a trailing slash.
std::string runtimeDir() {
  Dl_info info;
  if (!::dladdr(reinterpret_cast<void *>(&executableDir), &info) ||
      !info.dli_fname)
    return "";
  return dirOf(info.dli_fname);
}
} // namespace

std::unique_ptr<Collective> Collective::open(const std::string &path,
                                             double setupTimeout,
                                             const std::string &whereLooked) {
  void *lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = ::dlerror();
    throw Error("cannot open the collective plugin " + path + ": " +
                (why ? why : "unknown error") + whereLooked);
  }
  using Entry = const llmc_collective_api *(*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(lib, "llmc_collective_plugin"));
  const llmc_collective_api *api = entry ? entry() : nullptr;
  if (!api || api->abi_version != LLMC_COLLECTIVE_ABI_VERSION) {
    ::dlclose(lib);
    throw Error(path + ": not an llmc collective plugin of ABI version " +
                std::to_string(LLMC_COLLECTIVE_ABI_VERSION));
  }
  std::unique_ptr<Collective> c(new Collective());
  c->library_ = lib;
  c->api_ = api;
  char err[kErrLen] = "";
  int rc = api->open(setupTimeout, &c->job_, err, sizeof(err));
  if (rc != 0) {
    c->job_ = nullptr;
    throw Error(err);
  }
  c->rank_ = api->rank(c->job_);
  c->size_ = api->size(c->job_);
  return c;
}

std::unique_ptr<Collective> Collective::openMPI() {
  // LLMC_MPI_PLUGIN, else beside what the runtime is linked into (the
  // llmc tools; a Python module), beside the executable, where the build
  // put it, else the loader's search path.
  const char *name = "libllmc_mpi.so";
  std::string path = name;
  if (const char *p = std::getenv("LLMC_MPI_PLUGIN"); p && *p) {
    path = p;
  } else {
    std::vector<std::string> dirs = {runtimeDir(), executableDir()};
#ifdef LLMC_PLUGIN_BUILD_DIR
    dirs.push_back(LLMC_PLUGIN_BUILD_DIR "/");
#endif
    for (const std::string &dir : dirs)
      if (!dir.empty() && ::access((dir + name).c_str(), R_OK) == 0) {
        path = dir + name;
        break;
      }
  }
  double timeout = 60;
  if (const char *t = std::getenv("LLMC_COLLECTIVE_TIMEOUT"); t && *t) {
    char *end = nullptr;
    timeout = std::strtod(t, &end);
    if (*end || !(timeout > 0) || !(timeout <= kMaxTimeout))
      throw Error(std::string("LLMC_COLLECTIVE_TIMEOUT='") + t +
                  "' is not a number of seconds in (0, 1e6]");
  }
  return open(path, timeout,
              path != name ? ""
                           : " (not beside the program, nor in the loader's "
                             "path; LLMC_MPI_PLUGIN names it; built where "
                             "libopenmpi-dev is installed)");
}

Collective::~Collective() {
  // After a failure on this rank alone the others may be waiting in a
  // collective, and MPI_Finalize would wait for them: end the job instead.
  if (job_ && failed_) {
    std::fprintf(stderr, "llmc: error: %s (ending every rank)\n",
                 lastError_.c_str());
    api_->abort_job(job_, 4);
  }
  if (job_)
    api_->close(job_);
  // (The plugin stays loaded: MPI may not be re-initialized in a process.)
}

void Collective::check(int rc, const char *err) {
  if (rc != 0) {
    failed_ = true;
    lastError_ = err;
    throw Error(err);
  }
}

int Collective::group(const std::vector<int64_t> &shape,
                      const std::vector<int> &axes) {
  char err[kErrLen] = "";
  int g = -1;
  // (A bad mesh or axis fails every rank alike: no rank is left waiting.)
  if (api_->group(job_, shape.data(), static_cast<int>(shape.size()),
                  axes.data(), static_cast<int>(axes.size()), &g, err,
                  sizeof(err)) != 0)
    throw Error(err);
  return g;
}

int Collective::groupSize(int group) const {
  return api_->group_size(job_, group);
}

int Collective::groupRank(int group) const {
  return api_->group_rank(job_, group);
}

void Collective::allReduce(int group, float *data, int64_t count,
                           Reduction reduction) {
  char err[kErrLen] = "";
  check(api_->all_reduce_f32(job_, group, data, count,
                             static_cast<int>(reduction), err, sizeof(err)),
        err);
}

void Collective::allGather(int group, const void *in, void *out,
                           int64_t bytes) {
  char err[kErrLen] = "";
  check(api_->all_gather(job_, group, in, out, bytes, err, sizeof(err)), err);
}

void Collective::send(int group, int peer, const void *data, int64_t bytes) {
  char err[kErrLen] = "";
  check(api_->send(job_, group, peer, data, bytes, err, sizeof(err)), err);
}

void Collective::recv(int group, int peer, void *data, int64_t bytes) {
  char err[kErrLen] = "";
  check(api_->recv(job_, group, peer, data, bytes, err, sizeof(err)), err);
}

void Collective::agree(const std::string &what, uint64_t value) {
  char err[kErrLen] = "";
  // (Every rank fails alike: no rank is left waiting.)
  if (api_->agree(job_, what.c_str(), value, err, sizeof(err)) != 0) {
    failedAlike_ = true;
    throw Error(err);
  }
}

void Collective::abortJob(int code) {
  api_->abort_job(job_, code);
  std::_Exit(code); // (abort_job does not return; in case it does)
}

} // namespace llmc::rt
