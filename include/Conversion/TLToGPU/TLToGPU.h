//===- TLToGPU.h - tl kernels to the gpu dialect ----------------*- C++ -*-===//
#ifndef LLMC_CONVERSION_TLTOGPU_TLTOGPU_H
#define LLMC_CONVERSION_TLTOGPU_TLTOGPU_H

#include "mlir/Pass/Pass.h"

namespace llmc {
#define GEN_PASS_DECL_CONVERTTLTOGPU
#include "Conversion/Passes.h.inc"
} // namespace llmc

#endif // LLMC_CONVERSION_TLTOGPU_TLTOGPU_H
