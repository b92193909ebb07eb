#include "src/common/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tutti {

const Json& Json::operator[](const std::string& key) const {
  static const Json kNull;
  auto it = members_.find(key);
  return it == members_.end() ? kNull : it->second;
}

namespace {

void appendString(std::string* out, const std::string& s) {
  *out += '"';
  for (char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\n': *out += "\\n"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          *out += c;
        }
    }
  }
  *out += '"';
}

void dumpTo(const Json& j, int indent, std::string* out) {
  const std::string pad(indent + 2, ' '), close(indent, ' ');
  switch (j.type()) {
    case Json::Type::kNull: *out += "null"; break;
    case Json::Type::kBool: *out += j.asBool() ? "true" : "false"; break;
    case Json::Type::kNumber: {
      double v = j.asNumber();
      char buf[32];
      if (std::floor(v) == v && std::fabs(v) < 1e15) snprintf(buf, sizeof(buf), "%.0f", v);
      else snprintf(buf, sizeof(buf), "%.6g", v);
      *out += buf;
      break;
    }
    case Json::Type::kString: appendString(out, j.asString()); break;
    case Json::Type::kArray: {
      if (j.items().empty()) { *out += "[]"; break; }
      *out += "[\n";
      for (size_t i = 0; i < j.items().size(); ++i) {
        *out += pad;
        dumpTo(j.items()[i], indent + 2, out);
        *out += i + 1 < j.items().size() ? ",\n" : "\n";
      }
      *out += close + "]";
      break;
    }
    case Json::Type::kObject: {
      if (j.members().empty()) { *out += "{}"; break; }
      *out += "{\n";
      size_t i = 0;
      for (const auto& [k, v] : j.members()) {
        *out += pad;
        appendString(out, k);
        *out += ": ";
        dumpTo(v, indent + 2, out);
        *out += ++i < j.members().size() ? ",\n" : "\n";
      }
      *out += close + "}";
      break;
    }
  }
}

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Result<Json> document() {
    Json v;
    TUTTI_RETURN_IF_ERROR(value(&v, 0));
    skipSpace();
    if (pos_ != s_.size()) return error("unexpected text after the value");
    return v;
  }

 private:
  Status error(const std::string& what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') { ++line; column = 1; } else { ++column; }
    }
    return InvalidArgument("JSON line " + std::to_string(line) + " column " +
                           std::to_string(column) + ": " + what);
  }
  void skipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool literal(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }

  Status value(Json* out, int depth) {
    if (depth > 64) return error("nested too deeply");
    skipSpace();
    if (pos_ >= s_.size()) return error("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      std::string str;
      TUTTI_RETURN_IF_ERROR(string(&str));
      *out = Json(std::move(str));
      return Status::Ok();
    }
    if (literal("true")) { *out = Json(true); return Status::Ok(); }
    if (literal("false")) { *out = Json(false); return Status::Ok(); }
    if (literal("null")) { *out = Json(); return Status::Ok(); }
    const char* begin = s_.c_str() + pos_;
    char* end = nullptr;
    double n = std::strtod(begin, &end);
    if (end == begin) return error(std::string("unexpected character '") + c + "'");
    pos_ += static_cast<size_t>(end - begin);
    *out = Json(n);
    return Status::Ok();
  }

  Status string(std::string* out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') { *out += c; continue; }
      if (pos_ >= s_.size()) break;
      char e = s_[pos_++];
      switch (e) {
        case 'n': *out += '\n'; break;
        case 't': *out += '\t'; break;
        case 'r': *out += '\r'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return error("short \\u escape");
          unsigned code = static_cast<unsigned>(std::strtoul(s_.substr(pos_, 4).c_str(), nullptr, 16));
          pos_ += 4;
          if (code < 0x80) *out += static_cast<char>(code);
          else return error("only ASCII \\u escapes are supported");
          break;
        }
        default: *out += e;
      }
    }
    if (pos_ >= s_.size()) return error("unterminated string");
    ++pos_;
    return Status::Ok();
  }

  Status array(Json* out, int depth) {
    ++pos_;
    *out = Json::array();
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return Status::Ok(); }
    for (;;) {
      Json item;
      TUTTI_RETURN_IF_ERROR(value(&item, depth + 1));
      out->push(std::move(item));
      skipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; return Status::Ok(); }
      return error("expected ',' or ']'");
    }
  }

  Status object(Json* out, int depth) {
    ++pos_;
    *out = Json::object();
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return Status::Ok(); }
    for (;;) {
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return error("expected a member name");
      std::string key;
      TUTTI_RETURN_IF_ERROR(string(&key));
      skipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return error("expected ':'");
      ++pos_;
      Json v;
      TUTTI_RETURN_IF_ERROR(value(&v, depth + 1));
      out->set(key, std::move(v));
      skipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; return Status::Ok(); }
      return error("expected ',' or '}'");
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

std::string Json::dump(int indent) const {
  std::string out;
  dumpTo(*this, indent, &out);
  return out;
}

Result<Json> Json::parse(const std::string& text) { return Parser(text).document(); }

}  // namespace tutti
