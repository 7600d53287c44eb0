//===- JsonTest.cpp - Tests of the strict JSON parser -----------*- C++ -*-===//

#include "Json.h"

#include <gtest/gtest.h>

using namespace llmc::rt;

namespace {

/// Parses `text`, expecting failure; returns the error.
JsonError parseError(const std::string &text) {
  try {
    parseJson(text);
  } catch (const JsonError &e) {
    return e;
  }
  ADD_FAILURE() << "parsed without error: " << text;
  return JsonError("", 0, 0, 0);
}

TEST(JsonTest, ParsesAllValueKinds) {
  JsonValue v = parseJson(R"( {"a": [1, -2.5, 3e2, true, false, null],
                               "b": {"c": "d"}, "e": [], "f": {}} )");
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.members().size(), 4u);
  EXPECT_EQ(v.members()[0].first, "a"); // file order is kept
  const auto &a = v.find("a")->asArray();
  ASSERT_EQ(a.size(), 6u);
  EXPECT_TRUE(a[0].isInteger());
  EXPECT_EQ(a[0].asInteger(), 1);
  EXPECT_FALSE(a[1].isInteger());
  EXPECT_DOUBLE_EQ(a[1].asDouble(), -2.5);
  EXPECT_FALSE(a[2].isInteger()); // an exponent makes it a non-integer
  EXPECT_DOUBLE_EQ(a[2].asDouble(), 300.0);
  EXPECT_TRUE(a[3].isBool() && a[3].asBool());
  EXPECT_TRUE(a[4].isBool() && !a[4].asBool());
  EXPECT_TRUE(a[5].isNull());
  EXPECT_EQ(v.find("b")->find("c")->asString(), "d");
  EXPECT_TRUE(v.find("e")->asArray().empty());
  EXPECT_TRUE(v.find("f")->members().empty());
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(JsonTest, Numbers) {
  EXPECT_EQ(parseJson("0").asInteger(), 0);
  EXPECT_EQ(parseJson("-0").asInteger(), 0);
  EXPECT_EQ(parseJson("9223372036854775807").asInteger(), INT64_MAX);
  // Too large for int64: still a number, no longer an integer.
  JsonValue big = parseJson("9223372036854775808");
  EXPECT_TRUE(big.isNumber());
  EXPECT_FALSE(big.isInteger());
  EXPECT_DOUBLE_EQ(parseJson("1e-05").asDouble(), 1e-05);
  EXPECT_DOUBLE_EQ(parseJson("10000.0").asDouble(), 10000.0);
  EXPECT_DOUBLE_EQ(parseJson("1E+2").asDouble(), 100.0);
  EXPECT_EQ(parseJson("1e-400").asDouble(), 0.0); // underflow is harmless
}

TEST(JsonTest, StringEscapes) {
  EXPECT_EQ(parseJson(R"("a\"b\\c\/d\b\f\n\r\t")").asString(),
            "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(parseJson(R"("\u0041\u00e9\u20AC")").asString(),
            "A\xC3\xA9\xE2\x82\xAC");
  // A surrogate pair is one code point: U+1F600.
  EXPECT_EQ(parseJson(R"("\ud83d\ude00")").asString(), "\xF0\x9F\x98\x80");
  // Raw UTF-8 passes through.
  EXPECT_EQ(parseJson("\"\xE6\x97\xA5\xF0\x9F\x99\x82\"").asString(),
            "\xE6\x97\xA5\xF0\x9F\x99\x82");
  EXPECT_EQ(parseJson(R"("\u0000")").asString(), std::string(1, '\0'));
}

TEST(JsonTest, ErrorPositionIsLineAndColumn) {
  JsonError e = parseError("{\n  \"a\": 1,\n  \"b\" 2\n}");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.column(), 7u);
  EXPECT_EQ(std::string(e.what()),
            "line 3, column 7: unexpected '2' (expected ':')");
}

struct ErrorCase {
  const char *text;
  const char *message; // a substring of the expected message
};

class JsonErrorTest : public testing::TestWithParam<ErrorCase> {};

TEST_P(JsonErrorTest, ReportsError) {
  JsonError e = parseError(GetParam().text);
  EXPECT_NE(e.message().find(GetParam().message), std::string::npos)
      << "message: " << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, JsonErrorTest,
    testing::Values(
        ErrorCase{"", "unexpected end of input (expected a value)"},
        ErrorCase{"   ", "unexpected end of input"},
        ErrorCase{"1 2", "unexpected characters after the JSON value"},
        ErrorCase{"{} x", "unexpected characters after the JSON value"},
        ErrorCase{"@", "unexpected '@' (expected a value)"},
        ErrorCase{"tru", "invalid literal (expected 'true')"},
        ErrorCase{"nul", "invalid literal (expected 'null')"},
        ErrorCase{"True", "unexpected 'T'"},
        ErrorCase{"\"abc", "missing closing"},
        ErrorCase{"\"a\nb\"", "unescaped control character"},
        ErrorCase{R"("\x")", "invalid escape sequence '\\x'"},
        ErrorCase{R"("\u12G4")", "invalid hex digit 'G'"},
        ErrorCase{R"("\u12)", "unexpected end of input in \\u escape"},
        ErrorCase{R"("\ud83d")", "unpaired high surrogate"},
        ErrorCase{R"("\ud83dx")", "unpaired high surrogate"},
        ErrorCase{R"("\ud83d\u0041")", "unpaired high surrogate"},
        ErrorCase{R"("\ude00")", "unpaired low surrogate"},
        ErrorCase{"\"\xC3\"", "invalid UTF-8"},
        ErrorCase{"\"\xC0\xAF\"", "invalid UTF-8"},     // overlong
        ErrorCase{"\"\xED\xA0\x80\"", "invalid UTF-8"}, // encoded surrogate
        ErrorCase{"\"\xFF\"", "invalid UTF-8"}, ErrorCase{"01", "leading zero"},
        ErrorCase{"-", "expected a digit"}, ErrorCase{"-a", "expected a digit"},
        ErrorCase{"+1", "unexpected '+'"}, ErrorCase{".5", "unexpected '.'"},
        ErrorCase{"1.", "expected a digit after '.'"},
        ErrorCase{"1e", "expected a digit in the exponent"},
        ErrorCase{"1e+", "expected a digit in the exponent"},
        ErrorCase{"1e400", "number out of range"},
        ErrorCase{"[1,]", "trailing comma before ']'"},
        ErrorCase{"{\"a\":1,}", "trailing comma before '}'"},
        ErrorCase{"[1 2]", "unexpected '2' (expected ',' or ']')"},
        ErrorCase{"[1", "unexpected end of input (expected ',' or ']')"},
        ErrorCase{"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
        ErrorCase{"{\"a\":1", "unexpected end of input (expected ',' or '}')"},
        ErrorCase{"{\"a\" 1}", "unexpected '1' (expected ':')"},
        ErrorCase{"{a:1}", "expected a string as member name"},
        ErrorCase{"{\"a\":1,\"a\":2}", "duplicate member name \"a\""},
        ErrorCase{"// c\n1", "unexpected '/'"}));

TEST(JsonTest, NestingTooDeep) {
  std::string deep(10000, '[');
  EXPECT_NE(parseError(deep).message().find("nesting too deep"),
            std::string::npos);
  // Reasonable depth is fine.
  EXPECT_NO_THROW(parseJson(std::string(100, '[') + std::string(100, ']')));
}

} // namespace
