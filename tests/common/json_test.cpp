// JSON through nlohmann::json (src/common/json.h): parse errors as Status
// values that say where, and lookups that never throw.
#include "src/common/json.h"

#include <gtest/gtest.h>

namespace tutti {
namespace {

TEST(Json, ParseErrorsNameTheLineAndColumn) {
  auto bad = parseJson("{\"a\": 1,\n  \"b\" 2}");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 2, column"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(parseJson("").ok());
  EXPECT_FALSE(parseJson("{\"a\": 1} trailing").ok());
  auto good = parseJson("{\"a\": [1, \"two\"]}");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_EQ(good->at("a").size(), 2u);
}

// Hand-written files and another process's records are read without
// exceptions: what is absent or of another type gives the fallback.
TEST(Json, LookupsGiveTheFallbackForWhatIsAbsentOrOfAnotherType) {
  const Json j = parseJson(R"({"s": "text", "n": 2.5, "list": [1, 2, 3], "wrong": {"x": 1}})").value();
  EXPECT_EQ(jsonString(j, "s"), "text");
  EXPECT_EQ(jsonString(j, "n"), "");
  EXPECT_EQ(jsonString(j, "absent", "none"), "none");
  EXPECT_EQ(jsonNumber(j, "n"), 2.5);
  EXPECT_EQ(jsonNumber(j, "s", -1), -1);
  EXPECT_EQ(jsonNumber(j, "absent", 7), 7);
  EXPECT_EQ(jsonArray(j, "list").size(), 3u);
  EXPECT_TRUE(jsonArray(j, "wrong").empty());
  EXPECT_TRUE(jsonArray(j, "absent").empty());
  const Json notAnObject = parseJson("[1, 2]").value();
  EXPECT_EQ(jsonString(notAnObject, "s", "fallback"), "fallback");
  EXPECT_EQ(jsonNumber(notAnObject, "n", 3), 3);
  EXPECT_TRUE(jsonArray(notAnObject, "list").empty());
}

}  // namespace
}  // namespace tutti
