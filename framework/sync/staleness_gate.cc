#include "framework/sync/staleness_gate.h"

#include <fmt/format.h>

#include "framework/sync/wait_until.h"

namespace stalelearn::sync {

StalenessGate::StalenessGate(ClockTable& clocks, model::ComputeIndex me, StalenessBound bound,
                             transport::Transport& transport, WaitOptions wait)
    : clocks_(clocks), me_(me), bound_(bound), transport_(transport), wait_(wait) {}

Result<std::chrono::nanoseconds> StalenessGate::WaitUntilAllowed(std::uint64_t clock) {
  if (!bound_.bounded()) return std::chrono::nanoseconds(0);
  ClockTable::Slowest slowest{};
  return WaitUntil(
      wait_, transport_,
      [&]() -> Result<bool> {
        STALELEARN_RETURN_IF_ERROR(clocks_.Refresh());
        slowest = clocks_.SlowestOther(me_);
        return bound_.Allows(clock, slowest.merged_clock);
      },
      [&] {
        return fmt::format("compute rank {} to merge more clocks: compute rank {} may start clock {} only under "
                           "bound {}, and compute rank {} has {} clocks merged",
                           slowest.rank.value, me_.value, clock, bound_.value(), slowest.rank.value,
                           slowest.merged_clock);
      });
}

}  // namespace stalelearn::sync
