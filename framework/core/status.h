// Status and Result: the error model of the hot paths and of every layer below
// the public API (framework/README.md, convention 7). Public entry points convert a bad Status into
// stalelearn::Error (error.h) at the boundary.
//
// Thread-safety: value types; distinct objects may be used from any thread.
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace stalelearn {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // bad input from a user: config, data, command line
  kNotFound,            // a named thing (backend, dataset, key) does not exist
  kOutOfRange,          // an offset or size outside a region or shard
  kPermissionDenied,    // access rights forbid the operation (I7)
  kTimeout,             // a deadline passed before the operation completed
  kDataLoss,            // corrupt message or file: bad checksum, torn batch
  kFailedPrecondition,  // called in the wrong state
  kUnavailable,         // peer or transport gone
  kUnimplemented,       // the backend lacks the capability
  kInternal,            // a bug or an unexpected library failure
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "<code name>: <message>", or "ok".
  std::string ToString() const;

  // Returns this status with "context: " prepended to the message.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

Status InvalidArgument(std::string message);
Status NotFound(std::string message);
Status OutOfRange(std::string message);
Status PermissionDenied(std::string message);
Status TimeoutError(std::string message);
Status DataLoss(std::string message);
Status FailedPrecondition(std::string message);
Status Unavailable(std::string message);
Status Unimplemented(std::string message);
Status Internal(std::string message);

// A value or the Status that explains its absence.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }

  T& value() & { assert(ok()); return std::get<T>(v_); }
  const T& value() const& { assert(ok()); return std::get<T>(v_); }
  T&& value() && { assert(ok()); return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace stalelearn

// Propagates a non-OK Status from the enclosing function.
#define STALELEARN_RETURN_IF_ERROR(expr)                    \
  do {                                                      \
    ::stalelearn::Status _sl_status = (expr);               \
    if (!_sl_status.ok()) return _sl_status;                \
  } while (0)

#define STALELEARN_CONCAT_INNER(a, b) a##b
#define STALELEARN_CONCAT(a, b) STALELEARN_CONCAT_INNER(a, b)
// Declares `lhs` from a Result, or returns its Status from the enclosing function.
#define STALELEARN_ASSIGN_OR_RETURN(lhs, expr) \
  STALELEARN_ASSIGN_OR_RETURN_IMPL(STALELEARN_CONCAT(_sl_result_, __LINE__), lhs, expr)
#define STALELEARN_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                     \
  if (!tmp.ok()) return tmp.status();                    \
  lhs = std::move(tmp).value()
