//===- GGUF.cpp - a bounds-checked GGUF reader -----------------------------===//
#include "Import/GGUF.h"
#include "Import/Import.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace llmc;
using namespace llmc::gguf;

std::optional<llvm::StringRef> gguf::typeName(uint32_t type) {
  switch (static_cast<TensorType>(type)) {
  case TensorType::F32: return llvm::StringRef("F32");
  case TensorType::F16: return llvm::StringRef("F16");
  case TensorType::BF16: return llvm::StringRef("BF16");
  case TensorType::Q4_0: return llvm::StringRef("Q4_0");
  case TensorType::Q8_0: return llvm::StringRef("Q8_0");
  case TensorType::Q4_K: return llvm::StringRef("Q4_K");
  case TensorType::Q6_K: return llvm::StringRef("Q6_K");
  }
  return std::nullopt;
}

std::pair<uint64_t, uint64_t> gguf::blockLayout(TensorType type) {
  switch (type) {
  case TensorType::F32: return {1, 4};
  case TensorType::F16: return {1, 2};
  case TensorType::BF16: return {1, 2};
  case TensorType::Q4_0: return {32, 18};
  case TensorType::Q8_0: return {32, 34};
  case TensorType::Q4_K: return {256, 144};
  case TensorType::Q6_K: return {256, 210};
  }
  return {1, 1};
}

std::optional<int64_t> Value::asInt() const {
  if (auto *u = std::get_if<uint64_t>(&v))
    return *u <= static_cast<uint64_t>(INT64_MAX)
               ? std::optional<int64_t>(static_cast<int64_t>(*u))
               : std::nullopt;
  if (auto *i = std::get_if<int64_t>(&v))
    return *i;
  return std::nullopt;
}

std::optional<double> Value::asFloat() const {
  if (auto *d = std::get_if<double>(&v))
    return *d;
  if (auto i = asInt())
    return static_cast<double>(*i);
  return std::nullopt;
}

std::string Value::str() const {
  if (auto *u = std::get_if<uint64_t>(&v))
    return std::to_string(*u);
  if (auto *i = std::get_if<int64_t>(&v))
    return std::to_string(*i);
  if (auto *d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", *d);
    return buf;
  }
  if (auto *b = std::get_if<bool>(&v))
    return *b ? "true" : "false";
  if (auto *s = std::get_if<std::string>(&v)) {
    std::string escaped;
    llvm::raw_string_ostream os(escaped);
    llvm::printEscapedString(s->size() > 60 ? s->substr(0, 60) : *s, os);
    return "\"" + escaped + (s->size() > 60 ? "...\"" : "\"");
  }
  const Array &a = std::get<Array>(v);
  std::string out = "[";
  for (size_t i = 0; i < a.size() && i < 8; ++i)
    out += (i ? ", " : "") + a[i].str();
  if (a.size() > 8)
    out += llvm::formatv(", ... ({0} items)", a.size()).str();
  return out + "]";
}

namespace {
/// Sequential reads with bounds checks; every failure names the offset.
class Reader {
public:
  Reader(llvm::StringRef path, llvm::StringRef data) : path(path), data(data) {}

  llvm::Error fail(const llvm::Twine &what) const {
    return fileError(path, llvm::formatv("GGUF at byte {0}: ", pos).str() +
                               what);
  }
  uint64_t remaining() const { return data.size() - pos; }
  uint64_t position() const { return pos; }

  template <typename T> llvm::Error read(T &out, const char *what) {
    if (remaining() < sizeof(T))
      return fail(llvm::Twine("truncated file while reading ") + what);
    std::memcpy(&out, data.data() + pos, sizeof(T));
    pos += sizeof(T);
    return llvm::Error::success();
  }
  llvm::Error readString(std::string &out, const char *what) {
    uint64_t n;
    if (auto e = read(n, what))
      return e;
    if (n > remaining())
      return fail(llvm::formatv("{0}: string length {1} exceeds the {2} bytes "
                                "left in the file",
                                what, n, remaining())
                      .str());
    out.assign(data.data() + pos, n);
    pos += n;
    return llvm::Error::success();
  }

  llvm::Error readValue(uint32_t type, Value &out, const std::string &key,
                        unsigned depth) {
    auto scalar = [&](auto tag, auto convert) -> llvm::Error {
      decltype(tag) x;
      if (auto e = read(x, key.c_str()))
        return e;
      out.v = convert(x);
      return llvm::Error::success();
    };
    auto u = [](auto x) { return static_cast<uint64_t>(x); };
    auto s = [](auto x) { return static_cast<int64_t>(x); };
    auto f = [](auto x) { return static_cast<double>(x); };
    switch (type) {
    case 0: return scalar(uint8_t(), u);
    case 1: return scalar(int8_t(), s);
    case 2: return scalar(uint16_t(), u);
    case 3: return scalar(int16_t(), s);
    case 4: return scalar(uint32_t(), u);
    case 5: return scalar(int32_t(), s);
    case 6: return scalar(float(), f);
    case 7: {
      uint8_t b;
      if (auto e = read(b, key.c_str()))
        return e;
      if (b > 1)
        return fail("metadata '" + key + "': invalid bool");
      out.v = b == 1;
      return llvm::Error::success();
    }
    case 8: {
      std::string str;
      if (auto e = readString(str, key.c_str()))
        return e;
      out.v = std::move(str);
      return llvm::Error::success();
    }
    case 9: {
      if (depth > 2)
        return fail("metadata '" + key + "': arrays nested too deeply");
      uint32_t elemType;
      uint64_t count;
      if (auto e = read(elemType, key.c_str()))
        return e;
      if (auto e = read(count, key.c_str()))
        return e;
      // Every element takes at least one byte: a count beyond the bytes
      // left is corrupt, and must not size an allocation.
      if (count > remaining())
        return fail(llvm::formatv("metadata '{0}': array of {1} items cannot "
                                  "fit in the {2} bytes left",
                                  key, count, remaining())
                        .str());
      Value::Array items;
      items.reserve(count);
      for (uint64_t i = 0; i < count; ++i) {
        Value item;
        if (auto e = readValue(elemType, item, key, depth + 1))
          return e;
        items.push_back(std::move(item));
      }
      out.v = std::move(items);
      return llvm::Error::success();
    }
    case 10: return scalar(uint64_t(), u);
    case 11: return scalar(int64_t(), s);
    case 12: return scalar(double(), f);
    }
    return fail(llvm::formatv("metadata '{0}': unknown value type {1}", key,
                              type)
                    .str());
  }

private:
  std::string path;
  llvm::StringRef data;
  uint64_t pos = 0;
};
} // namespace

llvm::Expected<File> gguf::read(llvm::StringRef path) {
  // Mapped, not read: only the header and tables are touched.
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fileError(path, "cannot read: " + buffer.getError().message());
  return parse(path, (*buffer)->getBuffer());
}

llvm::Expected<File> gguf::parse(llvm::StringRef path, llvm::StringRef data) {
  Reader r(path, data);
  File file;
  file.path = path.str();
  file.fileSize = data.size();
  uint32_t magic;
  if (auto e = r.read(magic, "the magic number"))
    return std::move(e);
  if (std::memcmp(&magic, "GGUF", 4) != 0)
    return fileError(path, "not a GGUF file (bad magic number)");
  if (auto e = r.read(file.version, "the version"))
    return std::move(e);
  if (file.version != 2 && file.version != 3)
    return fileError(path, llvm::formatv("unsupported GGUF version {0} "
                                         "(supported: 2, 3)",
                                         file.version)
                               .str());
  uint64_t numTensors, numKV;
  if (auto e = r.read(numTensors, "the tensor count"))
    return std::move(e);
  if (auto e = r.read(numKV, "the metadata count"))
    return std::move(e);
  // A key takes at least 8 + 4 bytes, a tensor entry at least 8 + 4 + 4 + 8.
  if (numKV > r.remaining() / 12 || numTensors > r.remaining() / 24)
    return r.fail(llvm::formatv("{0} metadata entries and {1} tensors cannot "
                                "fit in the {2} bytes left",
                                numKV, numTensors, r.remaining())
                      .str());
  for (uint64_t i = 0; i < numKV; ++i) {
    std::string key;
    uint32_t type;
    if (auto e = r.readString(key, "a metadata key"))
      return std::move(e);
    if (auto e = r.read(type, key.c_str()))
      return std::move(e);
    Value value;
    if (auto e = r.readValue(type, value, key, 0))
      return std::move(e);
    file.metadata[key] = std::move(value);
  }
  if (const Value *a = file.get("general.alignment")) {
    auto align = a->asInt();
    if (!align || *align <= 0 || !llvm::isPowerOf2_64(*align))
      return fileError(path, "general.alignment must be a power of two");
    file.alignment = *align;
  }
  for (uint64_t i = 0; i < numTensors; ++i) {
    TensorInfo t;
    uint32_t nDims;
    if (auto e = r.readString(t.name, "a tensor name"))
      return std::move(e);
    if (auto e = r.read(nDims, t.name.c_str()))
      return std::move(e);
    if (nDims == 0 || nDims > 4)
      return r.fail(llvm::formatv("tensor '{0}': {1} dimensions (1 to 4 "
                                  "supported)",
                                  t.name, nDims)
                        .str());
    uint64_t elements = 1;
    for (uint32_t d = 0; d < nDims; ++d) {
      uint64_t n;
      if (auto e = r.read(n, t.name.c_str()))
        return std::move(e);
      if (n == 0 || n > (uint64_t(1) << 40) ||
          elements > (uint64_t(1) << 48) / n)
        return r.fail(llvm::formatv("tensor '{0}': absurd dimension {1}",
                                    t.name, n)
                          .str());
      elements *= n;
      t.ne.push_back(n);
    }
    if (auto e = r.read(t.type, t.name.c_str()))
      return std::move(e);
    if (auto e = r.read(t.offset, t.name.c_str()))
      return std::move(e);
    if (!typeName(t.type))
      return fileError(path, llvm::formatv("tensor '{0}' has unknown ggml "
                                           "type {1}",
                                           t.name, t.type)
                                 .str());
    auto [blockElems, blockBytes] =
        blockLayout(static_cast<TensorType>(t.type));
    if (t.ne[0] % blockElems)
      return fileError(path, llvm::formatv("tensor '{0}': row of {1} "
                                           "elements is not a whole number "
                                           "of {2} blocks",
                                           t.name, t.ne[0], *typeName(t.type))
                                 .str());
    t.bytes = elements / blockElems * blockBytes;
    file.tensors.push_back(std::move(t));
  }
  uint64_t dataStart = llvm::alignTo(r.position(), file.alignment);
  for (TensorInfo &t : file.tensors) {
    if (t.offset % file.alignment)
      return fileError(path, llvm::formatv("tensor '{0}': offset {1} is not "
                                           "aligned to {2}",
                                           t.name, t.offset, file.alignment)
                                 .str());
    if (dataStart > file.fileSize || t.offset > file.fileSize - dataStart ||
        t.bytes > file.fileSize - dataStart - t.offset)
      return fileError(path, llvm::formatv("tensor '{0}': data [{1}, {2}) "
                                           "runs past the end of the file "
                                           "({3} bytes)",
                                           t.name, dataStart + t.offset,
                                           dataStart + t.offset + t.bytes,
                                           file.fileSize)
                                 .str());
    t.offset += dataStart;
  }
  return file;
}
