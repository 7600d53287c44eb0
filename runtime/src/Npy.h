//===- Npy.h - Writing NumPy .npy files -------------------------*- C++ -*-===//
//
// Logit dumps are written as .npy so that tests and people can load them with
// numpy.load() and compare against a reference implementation directly.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_NPY_H
#define LLMC_RUNTIME_SRC_NPY_H

#include <cstdint>
#include <string>

namespace llmc::rt {

/// Returns the complete .npy version 1.0 header (magic, version, length,
/// dictionary) of a C-order float32 array of shape [rows, cols]. Its size is
/// a multiple of 64 bytes.
std::string npyHeaderF32(int64_t rows, int64_t cols);

/// Writes `data` ([rows, cols], row-major) as a .npy file. Throws Error
/// naming `path`.
void writeNpyF32(const std::string &path, const float *data, int64_t rows,
                 int64_t cols);

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_NPY_H
