#include "src/common/json.h"

namespace tutti {

Result<Json> parseJson(const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    return InvalidArgument(std::string("not JSON: ") + e.what());  // "... at line L, column C: ..."
  }
}

namespace {

const Json* member(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

}  // namespace

std::string jsonString(const Json& j, const char* key, const std::string& fallback) {
  const Json* m = member(j, key);
  return m && m->is_string() ? m->get<std::string>() : fallback;
}

double jsonNumber(const Json& j, const char* key, double fallback) {
  const Json* m = member(j, key);
  return m && m->is_number() ? m->get<double>() : fallback;
}

const Json& jsonArray(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  const Json* m = member(j, key);
  return m && m->is_array() ? *m : kEmpty;
}

}  // namespace tutti
