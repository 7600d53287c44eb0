//===- NpyTest.cpp - Tests of the .npy writer -------------------*- C++ -*-===//
//
// The header is parsed back here by a minimal reader that follows the format
// specification, independent of the writer's code.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"
#include "Error.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace llmc::rt;
using llmc::test::readWholeFile;
using llmc::test::TempDir;

namespace {

struct ParsedNpy {
  std::string dict;
  size_t dataOffset = 0;
};

/// Checks the fixed part of a version 1.0 header and returns its dict.
ParsedNpy parseHeader(const std::string &file) {
  ParsedNpy p;
  EXPECT_GE(file.size(), 10u);
  EXPECT_EQ(file.substr(0, 6), std::string("\x93NUMPY", 6));
  EXPECT_EQ(file[6], '\x01'); // major version
  EXPECT_EQ(file[7], '\x00'); // minor version
  size_t headerLen = static_cast<unsigned char>(file[8]) |
                     (static_cast<unsigned char>(file[9]) << 8);
  p.dataOffset = 10 + headerLen;
  EXPECT_EQ(p.dataOffset % 64, 0u);
  EXPECT_LE(p.dataOffset, file.size());
  p.dict = file.substr(10, headerLen);
  EXPECT_EQ(p.dict.back(), '\n');
  return p;
}

TEST(NpyTest, WritesHeaderAndData) {
  TempDir dir;
  std::vector<float> data(3 * 5);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i) * 0.5f - 1.0f;
  std::string path = dir.file("a.npy");
  writeNpyF32(path, data.data(), 3, 5);

  std::string file = readWholeFile(path);
  ParsedNpy p = parseHeader(file);
  // What numpy itself writes, padded with spaces.
  std::string expected =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }";
  EXPECT_EQ(p.dict.substr(0, expected.size()), expected);
  EXPECT_EQ(p.dict.find_first_not_of(' ', expected.size()), p.dict.size() - 1);
  ASSERT_EQ(file.size(), p.dataOffset + data.size() * 4);
  std::vector<float> back(data.size());
  std::memcpy(back.data(), file.data() + p.dataOffset, back.size() * 4);
  EXPECT_EQ(back, data);
}

TEST(NpyTest, HeaderLengthsAreAligned) {
  for (int64_t rows : {0, 1, 7, 123456789})
    for (int64_t cols : {1, 512, 32000}) {
      std::string h = npyHeaderF32(rows, cols);
      EXPECT_EQ(h.size() % 64, 0u);
      EXPECT_NE(h.find("'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + ")"),
                std::string::npos);
    }
}

TEST(NpyTest, EmptyArray) {
  TempDir dir;
  std::string path = dir.file("empty.npy");
  writeNpyF32(path, nullptr, 0, 512);
  std::string file = readWholeFile(path);
  ParsedNpy p = parseHeader(file);
  EXPECT_NE(p.dict.find("'shape': (0, 512)"), std::string::npos);
  EXPECT_EQ(file.size(), p.dataOffset);
}

TEST(NpyTest, UnwritablePathNamesFile) {
  TempDir dir;
  std::string path = dir.file("no/such/dir/a.npy");
  float x = 0;
  try {
    writeNpyF32(path, &x, 1, 1);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()).find(path + ": cannot open for writing"),
              0u)
        << e.what();
  }
}

} // namespace
