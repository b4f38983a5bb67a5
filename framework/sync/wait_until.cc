#include "framework/sync/wait_until.h"

#include <fmt/format.h>

#include "framework/sync/backoff.h"

namespace stalelearn::sync {

Result<std::chrono::nanoseconds> WaitUntil(const WaitOptions& wait, transport::Transport& transport,
                                           const std::function<Result<bool>()>& done,
                                           const std::function<std::string()>& describe) {
  const auto start = std::chrono::steady_clock::now();
  const Deadline deadline(wait.timeout);
  IdleBackoff backoff(wait.backoff);
  while (true) {
    STALELEARN_ASSIGN_OR_RETURN(const bool ready, done());
    if (ready) return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    if (deadline.Expired()) {
      return TimeoutError(fmt::format("timed out after {:.0f} s waiting for {}",
                                      std::chrono::duration<double>(wait.timeout).count(), describe()));
    }
    transport.Progress();
    STALELEARN_RETURN_IF_ERROR(backoff.Idle());
  }
}

}  // namespace stalelearn::sync
