//===- Hazards.h - which device steps must wait for the ones before -*- C++
//-*-===//
//
// A recorded phase runs its steps (kernel launches, buffer copies) on one
// queue; a pipeline barrier makes a step wait for every step before it.
// Steps that touch disjoint memory, or only read the same memory, need no
// barrier between them (the Q, K and V products of one token read the same
// activations and write their own outputs), so the device may overlap them.
// This tracks the byte ranges the steps since the last barrier read and
// wrote; a step overlapping one of them where either writes (read after
// write, write after read, write after write) needs a barrier first.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_HAZARDS_H
#define LLMC_RUNTIME_HAZARDS_H

#include <cstdint>
#include <vector>

namespace llmc::rt {

class HazardTracker {
public:
  /// Bytes [begin, end) of one buffer, read or (write) read and written.
  struct Access {
    const void *buffer;
    int64_t begin, end;
    bool write;
  };

  /// Whether a step making `accesses` must wait for a barrier: one of them
  /// overlaps an access since the last barrier where either writes.
  bool conflicts(const std::vector<Access> &accesses) const {
    for (const Access &a : accesses)
      for (const Access &p : pending)
        if (a.buffer == p.buffer && a.begin < p.end && p.begin < a.end &&
            (a.write || p.write))
          return true;
    return false;
  }
  /// A step made `accesses` (after a barrier, if it needed one).
  void add(const std::vector<Access> &accesses) {
    pending.insert(pending.end(), accesses.begin(), accesses.end());
  }
  /// A barrier: every step before it is done.
  void clear() { pending.clear(); }

private:
  std::vector<Access> pending;
};

} // namespace llmc::rt

#endif // LLMC_RUNTIME_HAZARDS_H
