//===- CollectiveTest.cpp - the MPI collectives, run under mpirun ---------===//
//
// Run by ctest as `mpirun -np N llmc_collective_test MODE`: every rank runs
// the same checks and exits 0 only if all hold.
//   all       reductions, gathers, groups of a mesh, send/receive (N = 2, 4)
//   mismatch  ranks that disagree on an artifact's fingerprint all fail
//   late      rank 1 arrives after the set-up timeout: rank 0 ends the job
//   short     rank 1 receives fewer bytes than it expects while rank 0 waits
//             in an all-reduce: rank 1's error ends the job (no hang)
//
//===----------------------------------------------------------------------===//
#include "Collective.h"
#include "Error.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

using llmc::rt::Collective;
using llmc::rt::Error;
using llmc::rt::Reduction;

namespace {
int failures = 0;
int me = -1;

void expect(bool ok, const std::string &what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", me, what.c_str());
    ++failures;
  }
}

void expectError(const std::string &needle, void (*f)(Collective &),
                 Collective &c) {
  try {
    f(c);
    expect(false, "expected an error containing '" + needle + "'");
  } catch (const Error &e) {
    expect(std::strstr(e.what(), needle.c_str()) != nullptr,
           "error '" + std::string(e.what()) + "' lacks '" + needle + "'");
  }
}

void checkAll(Collective &c) {
  int n = c.size(), r = c.rank();
  int world = c.group({n}, {0});
  expect(c.groupSize(world) == n && c.groupRank(world) == r, "world group");
  // Sums, maxima and minima of every rank's values.
  float v[3] = {float(r + 1), float(r), -float(r)};
  c.allReduce(world, v, 3);
  expect(v[0] == n * (n + 1) / 2.0f, "all-reduce sum");
  float m[2] = {float(r), float(r)};
  c.allReduce(world, m, 1, Reduction::max);
  c.allReduce(world, m + 1, 1, Reduction::min);
  expect(m[0] == n - 1 && m[1] == 0, "all-reduce max and min");
  // A gather in rank order.
  int32_t mine = 100 + r;
  std::vector<int32_t> all(n);
  c.allGather(world, &mine, all.data(), sizeof(mine));
  for (int i = 0; i < n; ++i)
    expect(all[i] == 100 + i, "all-gather order");
  // Point to point: each even rank sends to the next.
  double token = 0.5 + r;
  if (r % 2 == 0 && r + 1 < n)
    c.send(world, r + 1, &token, sizeof(token));
  else if (r % 2 == 1) {
    double got = 0;
    c.recv(world, r - 1, &got, sizeof(got));
    expect(got == 0.5 + (r - 1), "send and receive");
  }
  if (n == 4) {
    // A 2x2 mesh: ranks (p, t) = (r / 2, r % 2). The group along t holds
    // {2p, 2p + 1}; along p, {t, t + 2}.
    int alongT = c.group({2, 2}, {1}), alongP = c.group({2, 2}, {0});
    expect(c.groupSize(alongT) == 2 && c.groupRank(alongT) == r % 2,
           "the group along the second axis");
    expect(c.groupRank(alongP) == r / 2, "the group along the first axis");
    float s = float(r);
    c.allReduce(alongT, &s, 1);
    expect(s == float(2 * (r / 2) * 2 + 1), "all-reduce along the second axis");
    float s2 = float(r);
    c.allReduce(alongP, &s2, 1);
    expect(s2 == float(2 * (r % 2) + 2), "all-reduce along the first axis");
    // Both axes, the second first: member index t * 2 + p.
    int both = c.group({2, 2}, {1, 0});
    expect(c.groupRank(both) == (r % 2) * 2 + r / 2, "member order of axes");
  }
  // A mesh that does not match the job, a bad axis.
  expectError(
      "the mesh has 3 ranks but the job has",
      [](Collective &c) { c.group({3}, {0}); }, c);
  expectError(
      "bad group axis 2", [](Collective &c) { c.group({c.size()}, {2}); }, c);
  c.agree("the artifact", 42);
}

void checkMismatch(Collective &c) {
  // Rank 1 loaded another artifact: every rank fails, naming it.
  uint64_t fingerprint = c.rank() == 1 ? 0xbad : 0x600d;
  try {
    c.agree("the artifact's fingerprint", fingerprint);
    expect(false, "ranks that disagree must fail");
  } catch (const Error &e) {
    expect(std::strstr(e.what(), "do not agree on the artifact's "
                                 "fingerprint") != nullptr,
           std::string("unexpected error: ") + e.what());
  }
}
} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "all";
  if (mode == "late") {
    const char *r = std::getenv("OMPI_COMM_WORLD_RANK");
    if (r && std::atoi(r) == 1)
      std::this_thread::sleep_for(std::chrono::seconds(20));
  }
  try {
    std::unique_ptr<Collective> c = Collective::openMPI();
    me = c->rank();
    if (mode == "all")
      checkAll(*c);
    else if (mode == "mismatch")
      checkMismatch(*c);
    else if (mode == "short") {
      int world = c->group({c->size()}, {0});
      if (c->rank() == 0) {
        int32_t four = 4;
        c->send(world, 1, &four, sizeof(four));
        float x = 1;
        c->allReduce(world, &x, 1); // rank 1 never comes
        expect(false, "rank 0 must not get past the all-reduce");
      } else {
        double eight = 0;
        c->recv(world, 0, &eight, sizeof(eight)); // throws
      }
    } else if (mode != "late" && mode != "short")
      expect(false, "unknown mode " + mode);
  } catch (const Error &e) {
    std::fprintf(stderr, "rank %d: error: %s\n", me, e.what());
    return 2;
  }
  if (failures == 0)
    std::printf("rank %d: %s ok\n", me, mode.c_str());
  return failures ? 1 : 0;
}
