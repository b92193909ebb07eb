// Status and Result<T>: errors as values inside tutti; converted to
// tuttiResult_t only at the C boundary.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>

namespace tutti {

enum class Code {
  kOk = 0,
  kCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
  kTimeout = 8,
};

// The message lives apart, made only for a failure: an ok Status, which
// every layer of every small call builds, moves and destroys, is a code and
// a null pointer.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message)
      : code_(code), message_(message.empty() ? nullptr : std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& other) : code_(other.code_), message_(other.message_ ? std::make_unique<std::string>(*other.message_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) *this = Status(other);
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const {
    static const std::string kNone;
    return message_ ? *message_ : kNone;
  }

  // Prefixes context ("allreduce #3: ") so errors read from the outside in.
  Status withContext(const std::string& context) const {
    if (ok()) return *this;
    return Status(code_, context + ": " + message());
  }

 private:
  Code code_ = Code::kOk;
  std::unique_ptr<std::string> message_;
};

inline Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
inline Status InvalidUsage(std::string m) { return Status(Code::kInvalidUsage, std::move(m)); }
inline Status SystemError(std::string m) { return Status(Code::kSystemError, std::move(m)); }
inline Status InternalError(std::string m) { return Status(Code::kInternalError, std::move(m)); }
inline Status RemoteError(std::string m) { return Status(Code::kRemoteError, std::move(m)); }
inline Status TimeoutError(std::string m) { return Status(Code::kTimeout, std::move(m)); }
// A system error with strerror(errnum) appended.
Status ErrnoError(const std::string& what, int errnum);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}    // NOLINT
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() { return std::get<T>(v_); }
  const T& value() const { return std::get<T>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tutti

#define TUTTI_CONCAT_INNER(a, b) a##b
#define TUTTI_CONCAT(a, b) TUTTI_CONCAT_INNER(a, b)

// Returns early with the status when it is an error.
#define TUTTI_RETURN_IF_ERROR(expr)          \
  do {                                       \
    ::tutti::Status _st = (expr);            \
    if (!_st.ok()) return _st;               \
  } while (0)

#define TUTTI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp.value())

#define TUTTI_ASSIGN_OR_RETURN(lhs, expr) \
  TUTTI_ASSIGN_OR_RETURN_IMPL(TUTTI_CONCAT(_res_, __LINE__), lhs, expr)
