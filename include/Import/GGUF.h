//===- GGUF.h - reading GGUF files ------------------------------*- C++ -*-===//
//
// A bounds-checked reader of GGUF v2/v3 (llama.cpp's model format): header,
// typed metadata and the tensor table. No field read from the file can make
// it allocate more than the file holds.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_IMPORT_GGUF_H
#define LLMC_IMPORT_GGUF_H

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace llmc::gguf {

/// ggml tensor types llmc knows (values are ggml's).
enum class TensorType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8, Q4_K = 12, Q6_K = 14, BF16 = 30
};

/// The name of a ggml type ("Q4_K"), or nullopt for unknown ids.
std::optional<llvm::StringRef> typeName(uint32_t type);
/// Elements per block and bytes per block of a known type.
std::pair<uint64_t, uint64_t> blockLayout(TensorType type);

/// A metadata value: scalars, strings, or arrays of them.
struct Value {
  using Array = std::vector<Value>;
  std::variant<uint64_t, int64_t, double, bool, std::string, Array> v;
  /// The value as an integer, when it is one (any width or signedness).
  std::optional<int64_t> asInt() const;
  std::optional<double> asFloat() const;
  const std::string *asString() const { return std::get_if<std::string>(&v); }
  const Array *asArray() const { return std::get_if<Array>(&v); }
  /// A short rendering for `llmc inspect` (arrays abbreviated).
  std::string str() const;
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> ne; ///< ggml order: ne[0] is the innermost dimension
  uint32_t type = 0;
  uint64_t offset = 0; ///< absolute byte offset in the file
  uint64_t bytes = 0;
};

struct File {
  std::string path;
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t fileSize = 0;
  std::map<std::string, Value> metadata; ///< sorted, for inspect
  std::vector<TensorInfo> tensors;
  const Value *get(llvm::StringRef key) const {
    auto it = metadata.find(key.str());
    return it == metadata.end() ? nullptr : &it->second;
  }
};

/// Reads the header, metadata and tensor table of `path`; errors name the
/// file, the byte offset and the key or tensor involved.
llvm::Expected<File> read(llvm::StringRef path);
/// The same, from the file's bytes (`path` names it in errors).
llvm::Expected<File> parse(llvm::StringRef path, llvm::StringRef data);

} // namespace llmc::gguf

#endif // LLMC_IMPORT_GGUF_H
