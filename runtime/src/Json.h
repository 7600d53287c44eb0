//===- Json.h - A small strict JSON parser ----------------------*- C++ -*-===//
//
// Parses RFC 8259 JSON into an immutable tree. It exists so that the runtime
// can read metadata.json with no third-party dependency; it is strict (no
// comments, no trailing commas, no duplicate keys, valid UTF-8 only) because
// a metadata file that is not exactly what the compiler writes is a bug worth
// reporting, with its position.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_RUNTIME_SRC_JSON_H
#define LLMC_RUNTIME_SRC_JSON_H

#include "Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmc::rt {

/// A JSON syntax error. what() reads "line L, column C: message"; the
/// position is also available as fields (1-based; the column counts bytes).
class JsonError : public Error {
public:
  JsonError(const std::string &message, size_t offset, size_t line,
            size_t column);
  /// The bare message, without the position.
  const std::string &message() const { return msg; }
  size_t offset() const { return off; }
  size_t line() const { return ln; }
  size_t column() const { return col; }

private:
  std::string msg;
  size_t off, ln, col;
};

/// One parsed JSON value.
class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Member = std::pair<std::string, JsonValue>;

  JsonValue() = default;

  Kind kind() const { return k; }
  bool isNull() const { return k == Kind::Null; }
  bool isBool() const { return k == Kind::Bool; }
  bool isNumber() const { return k == Kind::Number; }
  /// True for a number written without fraction or exponent that fits in an
  /// int64_t: "2" is an integer, "2.0" and "2e0" are not.
  bool isInteger() const { return k == Kind::Number && integral; }
  bool isString() const { return k == Kind::String; }
  bool isArray() const { return k == Kind::Array; }
  bool isObject() const { return k == Kind::Object; }

  /// Accessors; each requires the matching kind.
  bool asBool() const { return boolean; }
  double asDouble() const { return number; }
  int64_t asInteger() const { return integer; }
  const std::string &asString() const { return string; }
  const std::vector<JsonValue> &asArray() const { return elements; }
  /// The members of an object in file order.
  const std::vector<Member> &members() const { return object; }

  /// Returns the member named `key` of an object, or nullptr if there is
  /// none (or this is not an object).
  const JsonValue *find(std::string_view key) const;

  /// A short name of the kind for messages: "null", "a string", ...
  static const char *kindName(Kind kind);

private:
  friend class JsonParser;
  Kind k = Kind::Null;
  bool boolean = false;
  bool integral = false;
  double number = 0;
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> elements;
  std::vector<Member> object;
};

/// Parses a complete JSON text (one value, optional surrounding whitespace).
/// Throws JsonError on the first error.
JsonValue parseJson(std::string_view text);

} // namespace llmc::rt

#endif // LLMC_RUNTIME_SRC_JSON_H
