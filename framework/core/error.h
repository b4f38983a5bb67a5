// Typed exception of the public API (framework/README.md, convention 7). Inner layers return Status;
// the boundary (CLI, app API, test harness) throws Error to carry it out.
#pragma once

#include <stdexcept>
#include <utility>

#include "framework/core/status.h"

namespace stalelearn {

class Error : public std::runtime_error {
 public:
  explicit Error(Status status) : std::runtime_error(status.message()), status_(std::move(status)) {}
  const Status& status() const { return status_; }

 private:
  Status status_;
};

// Throws Error if `status` is not OK.
inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw Error(status);
}

// Returns the value of `result` or throws Error with its status.
template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result.ok()) throw Error(result.status());
  return std::move(result).value();
}

}  // namespace stalelearn
