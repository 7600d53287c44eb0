//===- safetensors_fuzzer.cpp - libFuzzer target for the safetensors reader ===//
//
// Any byte string must either parse or produce an llvm::Error.
//
//===----------------------------------------------------------------------===//
#include "Import/Import.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llmc::WeightTable weights;
  if (llvm::Error e = llmc::parseSafetensors(
          "fuzz.safetensors",
          llvm::StringRef(reinterpret_cast<const char *>(data), size), weights))
    llvm::consumeError(std::move(e));
  return 0;
}
