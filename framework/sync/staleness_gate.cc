#include "framework/sync/staleness_gate.h"

#include <fmt/format.h>

#include "framework/sync/wait_until.h"

namespace stalelearn::sync {

StalenessGate::StalenessGate(ClockTable& clocks, model::ComputeIndex me, StalenessBound bound,
                             transport::Transport& transport, WaitOptions wait, bool counts_own_clocks)
    : clocks_(clocks),
      me_(me),
      except_(NotWaitedFor(me, counts_own_clocks)),
      bound_(bound),
      transport_(transport),
      wait_(wait) {}

Result<std::chrono::nanoseconds> StalenessGate::WaitUntilAllowed(std::uint64_t clock) {
  if (!bound_.bounded()) return std::chrono::nanoseconds(0);
  return WaitUntil(
      wait_, transport_,
      [&]() -> Result<bool> {
        STALELEARN_RETURN_IF_ERROR(clocks_.Refresh());
        const ClockTable::Slowest slowest = clocks_.SlowestOther(except_);
        if (bound_.Allows(clock, slowest.merged_clock)) return true;
        // Nothing else can let it through (timing backend: sleep until then).
        clocks_.WaitOnlyFor(slowest);
        return false;
      },
      [&] {
        const std::uint64_t s = static_cast<std::uint64_t>(bound_.value());
        const std::uint64_t needed = clock > s ? clock - s : 0;
        return fmt::format("merged clock: compute rank {} may start clock {} under bound {} once every other compute "
                           "rank has merged clock {}; behind: {}",
                           me_.value, clock, bound_.value(), needed, DescribeLaggards(clocks_, except_, needed));
      });
}

}  // namespace stalelearn::sync
