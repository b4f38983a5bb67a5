#include "framework/sync/backoff.h"

#include <algorithm>
#include <thread>

namespace stalelearn::sync {

Status IdleBackoff::Idle() {
  if (policy_.on_idle) {
    STALELEARN_ASSIGN_OR_RETURN(const bool waited, policy_.on_idle());
    if (waited) return Status::Ok();
  }
  const std::int64_t round = idle_rounds_++;
  if (round < policy_.spins) return Status::Ok();  // the caller's poll is the spin body
  if (round < policy_.spins + policy_.yields) {
    std::this_thread::yield();
    return Status::Ok();
  }
  const std::int64_t doublings = std::min<std::int64_t>(round - policy_.spins - policy_.yields, 20);
  const auto sleep = std::min<std::chrono::microseconds>(policy_.first_sleep * (std::int64_t{1} << doublings),
                                                         policy_.max_sleep);
  std::this_thread::sleep_for(sleep);
  return Status::Ok();
}

}  // namespace stalelearn::sync
