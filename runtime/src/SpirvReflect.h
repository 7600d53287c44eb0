//===- SpirvReflect.h - the entry points a SPIR-V module declares -*- C++
//-*-===//
//
// What the runtime checks of kernels.spv before it creates a pipeline for
// each kernel the dispatch program launches (a name Vulkan does not find
// in the module is invalid usage, which a driver need not report): the
// module's entry points, their execution models, and the descriptor
// bindings of the storage buffers each one's interface lists (SPIR-V 1.4
// and later list every global variable an entry point uses).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SPIRVREFLECT_H
#define LLMC_RUNTIME_SPIRVREFLECT_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace llmc::rt {

struct SpirvEntryPoint {
  std::string name;
  uint32_t executionModel = 0; ///< 5: GLCompute
  /// Set and binding of each storage buffer in its interface (SPIR-V 1.4+).
  std::vector<std::pair<uint32_t, uint32_t>> bindings;
};

struct SpirvModule {
  uint32_t version = 0; ///< 0x00MMmm00
  std::vector<SpirvEntryPoint> entryPoints;
  /// Whether entry points list every global they use (SPIR-V 1.4+).
  bool interfacesComplete() const { return version >= 0x00010400u; }
};

/// Reads the entry points of the SPIR-V words `w[0..n)`; an empty string,
/// or what is wrong with the module.
inline std::string reflectSpirv(const uint32_t *w, size_t n, SpirvModule &m) {
  if (n < 5 || w[0] != 0x07230203u)
    return "not a SPIR-V module";
  m.version = w[1];
  enum : uint32_t {
    OpEntryPoint = 15,
    OpVariable = 59,
    OpDecorate = 71,
    DecorationBinding = 33,
    DecorationDescriptorSet = 34,
    StorageClassUniform = 2,
    StorageClassStorageBuffer = 12,
  };
  struct EntryIds {
    std::vector<uint32_t> interface;
  };
  std::vector<EntryIds> ids;
  std::map<uint32_t, uint32_t> binding, set, storage;
  for (size_t i = 5; i < n;) {
    uint32_t count = w[i] >> 16, op = w[i] & 0xffffu;
    if (count == 0 || i + count > n)
      return "instruction at word " + std::to_string(i) +
             " runs past the module's end";
    const uint32_t *o = w + i + 1; // operands
    size_t k = count - 1;
    if (op == OpEntryPoint && k >= 3) {
      SpirvEntryPoint e;
      e.executionModel = o[0];
      // The name: a nul-terminated literal from operand 2, padded to words.
      size_t j = 2;
      bool ended = false;
      for (; j < k && !ended; ++j)
        for (int b = 0; b < 4; ++b) {
          char c = static_cast<char>((o[j] >> (8 * b)) & 0xff);
          if (c == 0) {
            ended = true;
            break;
          }
          e.name += c;
        }
      if (!ended)
        return "an entry point's name is not terminated";
      m.entryPoints.push_back(std::move(e));
      ids.push_back({std::vector<uint32_t>(o + j, o + k)});
    } else if (op == OpDecorate && k >= 3) {
      if (o[1] == DecorationBinding)
        binding[o[0]] = o[2];
      if (o[1] == DecorationDescriptorSet)
        set[o[0]] = o[2];
    } else if (op == OpVariable && k >= 3) {
      storage[o[1]] = o[2];
    }
    i += count;
  }
  for (size_t e = 0; e < ids.size(); ++e)
    for (uint32_t id : ids[e].interface) {
      auto s = storage.find(id);
      auto b = binding.find(id);
      if (s == storage.end() || b == binding.end() ||
          (s->second != StorageClassStorageBuffer &&
           s->second != StorageClassUniform))
        continue;
      m.entryPoints[e].bindings.push_back(
          {set.count(id) ? set[id] : 0, b->second});
    }
  return "";
}

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SPIRVREFLECT_H
