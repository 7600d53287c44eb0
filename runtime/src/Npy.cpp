//===- Npy.cpp - Writing NumPy .npy files -----------------------*- C++ -*-===//
//
// Format:
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// "\x93NUMPY", version 1.0, a little-endian uint16 header length, then a
// Python dict literal padded with spaces and ended by '\n' so that the data
// starts at a multiple of 64 bytes.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include "Error.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace llmc::rt {

static bool hostIsLittleEndian() {
  const uint16_t one = 1;
  unsigned char first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

std::string npyHeaderF32(int64_t rows, int64_t cols) {
  std::string dict =
      std::string("{'descr': '") + (hostIsLittleEndian() ? "<f4" : ">f4") +
      "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
      std::to_string(cols) + "), }";
  const size_t prefix = 10; // magic (6) + version (2) + length (2)
  size_t total = prefix + dict.size() + 1; // + '\n'
  total = (total + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xFF);
  header += static_cast<char>((dict.size() >> 8) & 0xFF);
  return header + dict;
}

void writeNpyF32(const std::string &path, const float *data, int64_t rows,
                 int64_t cols) {
  if (rows < 0 || cols < 0)
    throw Error(path + ": invalid array shape [" + std::to_string(rows) + ", " +
                std::to_string(cols) + "]");
  if (!data && rows * cols > 0)
    throw Error(path + ": no data to write");
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    throw Error(path + ": cannot open for writing: " + errnoMessage(errno));
  std::string header = npyHeaderF32(rows, cols);
  size_t count = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  if (ok && count > 0)
    ok = std::fwrite(data, sizeof(float), count, f) == count;
  int writeErrno = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    writeErrno = errno;
  }
  if (!ok)
    throw Error(path + ": write error: " + errnoMessage(writeErrno));
}

} // namespace llmc::rt
