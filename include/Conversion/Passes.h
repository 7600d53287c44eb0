//===- Passes.h - llmc conversion passes ------------------------*- C++ -*-===//
#ifndef LLMC_CONVERSION_PASSES_H
#define LLMC_CONVERSION_PASSES_H

#include "Conversion/GraphToTL/GraphToTL.h"
#include "Conversion/TLToGPU/TLToGPU.h"
#include "Conversion/TLToSCF/TLToSCF.h"

namespace llmc {
#define GEN_PASS_REGISTRATION
#include "Conversion/Passes.h.inc"
} // namespace llmc

#endif // LLMC_CONVERSION_PASSES_H
