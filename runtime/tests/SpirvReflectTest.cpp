//===- SpirvReflectTest.cpp - Tests of the SPIR-V entry point reader ----===//
#include "SpirvReflect.h"

#include <gtest/gtest.h>

using namespace llmc::rt;

namespace {

uint32_t op(uint32_t count, uint32_t opcode) { return count << 16 | opcode; }
uint32_t chars(const char *s) { // up to 4 characters, little-endian
  uint32_t w = 0;
  for (int i = 0; i < 4 && s[i]; ++i)
    w |= uint32_t(uint8_t(s[i])) << (8 * i);
  return w;
}

TEST(SpirvReflect, EntryPointsAndTheirStorageBindings) {
  // GLCompute "kern" using %10 (storage buffer, set 0 binding 2) and %11
  // (a workgroup variable: no binding).
  std::vector<uint32_t> w = {
      0x07230203u,   0x00010600u, 0,  30, 0,         op(7, 15), 5,  1,
      chars("kern"), 0,           10, 11, op(4, 71), 10,        33, 2,
      op(4, 71),     10,          34, 0,  op(4, 59), 20,        10, 12,
      op(4, 59),     21,          11, 4};
  SpirvModule m;
  ASSERT_EQ(reflectSpirv(w.data(), w.size(), m), "");
  EXPECT_TRUE(m.interfacesComplete());
  ASSERT_EQ(m.entryPoints.size(), 1u);
  EXPECT_EQ(m.entryPoints[0].name, "kern");
  EXPECT_EQ(m.entryPoints[0].executionModel, 5u);
  ASSERT_EQ(m.entryPoints[0].bindings.size(), 1u);
  EXPECT_EQ(m.entryPoints[0].bindings[0], std::make_pair(0u, 2u));
}

TEST(SpirvReflect, BrokenModulesAreNamed) {
  SpirvModule m;
  std::vector<uint32_t> notSpirv = {1, 2, 3, 4, 5};
  EXPECT_EQ(reflectSpirv(notSpirv.data(), notSpirv.size(), m),
            "not a SPIR-V module");
  // An instruction whose count runs past the end.
  std::vector<uint32_t> cut = {0x07230203u, 0x00010600u, 0, 30,
                               0,           op(9, 15),   5, 1};
  EXPECT_NE(reflectSpirv(cut.data(), cut.size(), m).find("runs past"),
            std::string::npos);
  // A name with no terminating zero inside its instruction.
  std::vector<uint32_t> name = {0x07230203u, 0x00010600u, 0, 30,           0,
                                op(4, 15),   5,           1, chars("kern")};
  EXPECT_EQ(reflectSpirv(name.data(), name.size(), m),
            "an entry point's name is not terminated");
}

} // namespace
