//===- Json.cpp - A small strict JSON parser --------------------*- C++ -*-===//
//
// A recursive-descent parser over the RFC 8259 grammar. Numbers are checked
// against the grammar first and only then converted, so that inputs such as
// "01", "1." or "+1" are rejected rather than half-read.
//
//===----------------------------------------------------------------------===//

#include "Json.h"
#include "Unicode.h"

#include <charconv>

namespace llmc::rt {

static std::string formatPosition(const std::string &message, size_t line,
                                  size_t column) {
  return "line " + std::to_string(line) + ", column " + std::to_string(column) +
         ": " + message;
}

JsonError::JsonError(const std::string &message, size_t offset, size_t line,
                     size_t column)
    : Error(formatPosition(message, line, column)), msg(message), off(offset),
      ln(line), col(column) {}

const JsonValue *JsonValue::find(std::string_view key) const {
  if (k != Kind::Object)
    return nullptr;
  for (const Member &m : object)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

const char *JsonValue::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "?";
}

/// The parser state; a class only so that JsonValue can befriend it.
class JsonParser {
public:
  explicit JsonParser(std::string_view text) : text(text) {}

  JsonValue parseDocument() {
    skipWhitespace();
    JsonValue v = parseValue(0);
    skipWhitespace();
    if (pos != text.size())
      fail("unexpected characters after the JSON value");
    return v;
  }

private:
  /// Deep enough for any metadata, shallow enough not to overflow the stack
  /// on hostile input.
  static constexpr int kMaxDepth = 256;

  std::string_view text;
  size_t pos = 0;

  [[noreturn]] void failAt(size_t offset, const std::string &message) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw JsonError(message, offset, line, column);
  }
  [[noreturn]] void fail(const std::string &message) const {
    failAt(pos, message);
  }

  bool atEnd() const { return pos >= text.size(); }
  unsigned char peek() const {
    return atEnd() ? 0 : static_cast<unsigned char>(text[pos]);
  }

  static std::string describe(unsigned char c) {
    if (c >= 0x20 && c < 0x7f)
      return std::string("'") + static_cast<char>(c) + "'";
    static const char *hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
  }

  void skipWhitespace() {
    while (!atEnd()) {
      char c = text[pos];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
        break;
      ++pos;
    }
  }

  void expectLiteral(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      fail("invalid literal (expected '" + std::string(word) + "')");
    pos += word.size();
  }

  JsonValue parseValue(int depth) {
    if (atEnd())
      fail("unexpected end of input (expected a value)");
    JsonValue v;
    unsigned char c = peek();
    switch (c) {
    case '{':
      return parseObject(depth);
    case '[':
      return parseArray(depth);
    case '"':
      v.k = JsonValue::Kind::String;
      v.string = parseString();
      return v;
    case 't':
      expectLiteral("true");
      v.k = JsonValue::Kind::Bool;
      v.boolean = true;
      return v;
    case 'f':
      expectLiteral("false");
      v.k = JsonValue::Kind::Bool;
      return v;
    case 'n':
      expectLiteral("null");
      return v;
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber();
      fail("unexpected " + describe(c) + " (expected a value)");
    }
  }

  JsonValue parseObject(int depth) {
    if (depth >= kMaxDepth)
      fail("nesting too deep");
    ++pos; // '{'
    JsonValue v;
    v.k = JsonValue::Kind::Object;
    skipWhitespace();
    if (peek() == '}' && !atEnd()) {
      ++pos;
      return v;
    }
    while (true) {
      skipWhitespace();
      if (atEnd())
        fail("unexpected end of input (expected a member name)");
      if (peek() != '"')
        fail("unexpected " + describe(peek()) +
             " (expected a string as member name)");
      size_t keyPos = pos;
      std::string key = parseString();
      if (v.find(key))
        failAt(keyPos, "duplicate member name \"" + key + "\"");
      skipWhitespace();
      if (atEnd())
        fail("unexpected end of input (expected ':')");
      if (peek() != ':')
        fail("unexpected " + describe(peek()) + " (expected ':')");
      ++pos;
      skipWhitespace();
      JsonValue member = parseValue(depth + 1);
      v.object.emplace_back(std::move(key), std::move(member));
      skipWhitespace();
      if (atEnd())
        fail("unexpected end of input (expected ',' or '}')");
      if (peek() == ',') {
        ++pos;
        skipWhitespace();
        if (peek() == '}' && !atEnd())
          fail("trailing comma before '}'");
        continue;
      }
      if (peek() == '}') {
        ++pos;
        return v;
      }
      fail("unexpected " + describe(peek()) + " (expected ',' or '}')");
    }
  }

  JsonValue parseArray(int depth) {
    if (depth >= kMaxDepth)
      fail("nesting too deep");
    ++pos; // '['
    JsonValue v;
    v.k = JsonValue::Kind::Array;
    skipWhitespace();
    if (peek() == ']' && !atEnd()) {
      ++pos;
      return v;
    }
    while (true) {
      skipWhitespace();
      v.elements.push_back(parseValue(depth + 1));
      skipWhitespace();
      if (atEnd())
        fail("unexpected end of input (expected ',' or ']')");
      if (peek() == ',') {
        ++pos;
        skipWhitespace();
        if (peek() == ']' && !atEnd())
          fail("trailing comma before ']'");
        continue;
      }
      if (peek() == ']') {
        ++pos;
        return v;
      }
      fail("unexpected " + describe(peek()) + " (expected ',' or ']')");
    }
  }

  /// Reads the 4 hex digits of a \u escape; pos is on the first digit.
  uint32_t parseHex4() {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      if (atEnd())
        fail("unexpected end of input in \\u escape");
      unsigned char c = peek();
      uint32_t d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        fail("invalid hex digit " + describe(c) + " in \\u escape");
      value = value * 16 + d;
      ++pos;
    }
    return value;
  }

  /// Validates one UTF-8 encoded code point starting at pos and copies it.
  void copyUtf8(std::string &out) {
    size_t start = pos;
    unsigned char c = peek();
    int extra;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1, cp = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2, cp = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3, cp = c & 0x07, min = 0x10000;
    } else {
      fail("invalid UTF-8 " + describe(c) + " in string");
    }
    ++pos;
    for (int i = 0; i < extra; ++i) {
      if (atEnd() || (peek() & 0xC0) != 0x80)
        failAt(start, "invalid UTF-8 sequence in string");
      cp = (cp << 6) | (peek() & 0x3F);
      ++pos;
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      failAt(start, "invalid UTF-8 sequence in string");
    out.append(text.substr(start, pos - start));
  }

  std::string parseString() {
    ++pos; // opening quote
    std::string out;
    while (true) {
      if (atEnd())
        fail("unexpected end of input in string (missing closing '\"')");
      unsigned char c = peek();
      if (c == '"') {
        ++pos;
        return out;
      }
      if (c < 0x20)
        fail("unescaped control character " + describe(c) + " in string");
      if (c >= 0x80) {
        copyUtf8(out);
        continue;
      }
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos;
        continue;
      }
      size_t escapePos = pos;
      ++pos;
      if (atEnd())
        fail("unexpected end of input in escape sequence");
      c = peek();
      ++pos;
      switch (c) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = parseHex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          failAt(escapePos, "unpaired low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          // A high surrogate must be followed by an escaped low surrogate.
          if (text.substr(pos, 2) != "\\u")
            failAt(escapePos, "unpaired high surrogate in \\u escape");
          pos += 2;
          uint32_t low = parseHex4();
          if (low < 0xDC00 || low > 0xDFFF)
            failAt(escapePos, "unpaired high surrogate in \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        unicode::appendUtf8(out, cp);
        break;
      }
      default:
        failAt(escapePos, "invalid escape sequence '\\" +
                              std::string(1, static_cast<char>(c)) + "'");
      }
    }
  }

  JsonValue parseNumber() {
    size_t start = pos;
    auto digits = [&] {
      size_t n = 0;
      while (peek() >= '0' && peek() <= '9' && !atEnd()) {
        ++pos;
        ++n;
      }
      return n;
    };
    if (peek() == '-')
      ++pos;
    if (atEnd() || !(peek() >= '0' && peek() <= '9'))
      fail("invalid number: expected a digit");
    if (peek() == '0') {
      ++pos;
      if (peek() >= '0' && peek() <= '9' && !atEnd())
        fail("invalid number: leading zero");
    } else {
      digits();
    }
    bool integral = true;
    if (peek() == '.' && !atEnd()) {
      integral = false;
      ++pos;
      if (digits() == 0)
        fail("invalid number: expected a digit after '.'");
    }
    if ((peek() == 'e' || peek() == 'E') && !atEnd()) {
      integral = false;
      ++pos;
      if (peek() == '+' || peek() == '-')
        ++pos;
      if (digits() == 0)
        fail("invalid number: expected a digit in the exponent");
    }
    std::string_view lexeme = text.substr(start, pos - start);
    JsonValue v;
    v.k = JsonValue::Kind::Number;
    // from_chars, unlike strtod, ignores the C locale's decimal separator.
    auto [dend, dec] =
        std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), v.number);
    if (dec == std::errc::result_out_of_range) {
      // Underflow to zero is harmless; overflow would silently become inf.
      bool tiny = lexeme.find("e-") != std::string_view::npos ||
                  lexeme.find("E-") != std::string_view::npos;
      if (!tiny)
        failAt(start, "number out of range");
      v.number = 0;
    } else if (dec != std::errc() || dend != lexeme.data() + lexeme.size()) {
      failAt(start, "invalid number");
    }
    if (integral) {
      int64_t i = 0;
      auto [end, ec] =
          std::from_chars(lexeme.data(), lexeme.data() + lexeme.size(), i);
      if (ec == std::errc() && end == lexeme.data() + lexeme.size()) {
        v.integral = true;
        v.integer = i;
      }
    }
    return v;
  }
};

JsonValue parseJson(std::string_view text) {
  return JsonParser(text).parseDocument();
}

} // namespace llmc::rt
