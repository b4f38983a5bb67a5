#include "framework/sync/staleness_gate.h"

#include <fmt/format.h>

namespace stalelearn::sync {

StalenessGate::StalenessGate(ClockTable& clocks, model::ComputeIndex me, StalenessBound bound,
                             transport::Transport& transport, WaitOptions wait)
    : clocks_(clocks), me_(me), bound_(bound), transport_(transport), wait_(wait) {}

Result<std::chrono::nanoseconds> StalenessGate::WaitUntilAllowed(std::uint64_t clock) {
  if (!bound_.bounded()) return std::chrono::nanoseconds(0);
  const auto start = std::chrono::steady_clock::now();
  Deadline deadline(wait_.timeout);
  IdleBackoff backoff(wait_.backoff);
  while (true) {
    STALELEARN_RETURN_IF_ERROR(clocks_.Refresh());
    const ClockTable::Slowest slowest = clocks_.SlowestOther(me_);
    if (bound_.Allows(clock, slowest.merged_clock)) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
    }
    if (deadline.Expired()) {
      return TimeoutError(fmt::format("compute rank {} waited too long to start clock {} (bound {}): compute rank "
                                      "{} has only {} clocks merged",
                                      me_.value, clock, bound_.value(), slowest.rank.value, slowest.merged_clock));
    }
    transport_.Progress();
    STALELEARN_RETURN_IF_ERROR(backoff.Idle());
  }
}

}  // namespace stalelearn::sync
