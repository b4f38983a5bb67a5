#include "framework/sync/backoff.h"

#include <algorithm>
#include <thread>

namespace stalelearn::sync {

void IdleBackoff::Idle() {
  const std::int64_t round = idle_rounds_++;
  if (round < policy_.spins) return;  // the caller's poll is the spin body
  if (round < policy_.spins + policy_.yields) {
    std::this_thread::yield();
    return;
  }
  const std::int64_t doublings = std::min<std::int64_t>(round - policy_.spins - policy_.yields, 20);
  const auto sleep = std::min<std::chrono::microseconds>(policy_.first_sleep * (std::int64_t{1} << doublings),
                                                         policy_.max_sleep);
  std::this_thread::sleep_for(sleep);
}

}  // namespace stalelearn::sync
