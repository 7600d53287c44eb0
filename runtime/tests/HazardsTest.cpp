//===- HazardsTest.cpp - Tests of the barrier placement's hazards -------===//
#include "Hazards.h"

#include <gtest/gtest.h>

using llmc::rt::HazardTracker;
using Access = HazardTracker::Access;

namespace {

int A, B; // two buffers (their addresses are the handles)

TEST(Hazards, ReadsOfTheSameBytesShareNoBarrier) {
  // Q, K, V of one token: each reads x and writes its own output.
  HazardTracker t;
  std::vector<Access> q = {{&A, 0, 256, false}, {&A, 1024, 1280, true}};
  std::vector<Access> k = {{&A, 0, 256, false}, {&A, 1280, 1536, true}};
  EXPECT_FALSE(t.conflicts(q));
  t.add(q);
  EXPECT_FALSE(t.conflicts(k));
  t.add(k);
}

TEST(Hazards, ReadAfterWriteWriteAfterReadWriteAfterWrite) {
  HazardTracker t;
  t.add({{&A, 0, 256, true}, {&A, 512, 768, false}});
  EXPECT_TRUE(t.conflicts({{&A, 255, 300, false}}));  // reads what was written
  EXPECT_TRUE(t.conflicts({{&A, 700, 800, true}}));   // writes what was read
  EXPECT_TRUE(t.conflicts({{&A, 100, 101, true}}));   // writes what was written
  EXPECT_FALSE(t.conflicts({{&A, 256, 512, true}}));  // the gap between
  EXPECT_FALSE(t.conflicts({{&A, 600, 700, false}})); // reads what was read
  EXPECT_FALSE(t.conflicts({{&B, 0, 256, true}}));    // another buffer
  t.clear();                                          // a barrier
  EXPECT_FALSE(t.conflicts({{&A, 0, 256, true}}));
}

} // namespace
