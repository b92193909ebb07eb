// JSON values are nlohmann::json (Debian's nlohmann-json3-dev). What tutti
// reads is written by hand (topology files) or by another process (flight
// recorders), so it is read without exceptions: text into a Result, and
// members by lookups that give a fallback for what is absent or of another type.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "src/common/status.h"

namespace tutti {

using Json = nlohmann::json;

// Errors name the line and column.
Result<Json> parseJson(const std::string& text);

// Member `key` of object `j`: its value when it is there and of that type,
// `fallback` otherwise (and when `j` is not an object).
std::string jsonString(const Json& j, const char* key, const std::string& fallback = "");
double jsonNumber(const Json& j, const char* key, double fallback = 0);
// The array `key`, empty when absent or not an array.
const Json& jsonArray(const Json& j, const char* key);

}  // namespace tutti
