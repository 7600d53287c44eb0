//===- gguf_fuzzer.cpp - libFuzzer target for the GGUF reader --------------===//
//
// Any byte string must either parse or produce an llvm::Error: no crash, no
// out-of-bounds read, no allocation sized by an unchecked header field.
//
//===----------------------------------------------------------------------===//
#include "Import/GGUF.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = llmc::gguf::parse(
      "fuzz.gguf", llvm::StringRef(reinterpret_cast<const char *>(data), size));
  if (!file) {
    llvm::consumeError(file.takeError());
    return 0;
  }
  // Touch what the importer and `llmc inspect` read.
  for (const auto &entry : file->metadata)
    (void)entry.second.str();
  return 0;
}
