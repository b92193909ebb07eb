// A small JSON value, writer and parser: enough for topology files, which
// people write by hand to describe machines tutti is not running on.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/common/status.h"

namespace tutti {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Json() = default;
  Json(bool b) : type_(Type::kBool), bool_(b) {}
  Json(double n) : type_(Type::kNumber), number_(n) {}
  Json(int n) : type_(Type::kNumber), number_(n) {}
  Json(const char* s) : type_(Type::kString), string_(s) {}
  Json(std::string s) : type_(Type::kString), string_(std::move(s)) {}
  static Json array() { Json j; j.type_ = Type::kArray; return j; }
  static Json object() { Json j; j.type_ = Type::kObject; return j; }

  Type type() const { return type_; }
  bool isObject() const { return type_ == Type::kObject; }
  bool isArray() const { return type_ == Type::kArray; }
  bool asBool(bool fallback = false) const { return type_ == Type::kBool ? bool_ : fallback; }
  double asNumber(double fallback = 0) const { return type_ == Type::kNumber ? number_ : fallback; }
  const std::string& asString() const { return string_; }
  const std::vector<Json>& items() const { return items_; }
  const std::map<std::string, Json>& members() const { return members_; }
  // Member lookup: a null value when absent (or when this is not an object).
  const Json& operator[](const std::string& key) const;
  bool has(const std::string& key) const { return members_.count(key) > 0; }

  void push(Json v) { items_.push_back(std::move(v)); }
  void set(const std::string& key, Json v) { members_[key] = std::move(v); }

  // Two-space indented text.
  std::string dump(int indent = 0) const;
  // Errors name the line and column.
  static Result<Json> parse(const std::string& text);

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<Json> items_;
  std::map<std::string, Json> members_;
};

}  // namespace tutti
