#include "framework/sync/wait_until.h"

#include <fmt/format.h>

#include <algorithm>

#include "framework/core/wait.h"

namespace stalelearn::sync {

Result<std::chrono::nanoseconds> WaitUntil(const WaitOptions& wait, transport::Transport& transport,
                                           const std::function<Result<bool>()>& done,
                                           const std::function<std::string()>& describe) {
  const std::string who = fmt::format("rank {}", transport.rank().value);
  const WaitSpec spec{.timeout = wait.timeout,
                      .warn_after = wait.warn_after,
                      .backoff = wait.backoff,
                      .who = who,
                      .describe = [&describe] { return describe(); }};  // no copy of the caller's closure
  return WaitFor(spec, done, [&]() -> Status {
    if (wait.while_waiting) STALELEARN_RETURN_IF_ERROR(wait.while_waiting());
    transport.Progress();  // a target must progress for one-sided operations over tcp to complete
    return Status::Ok();
  });
}

void ApplyWaitConfig(const proto::WaitConfig& config, WaitOptions& wait) {
  const auto to_nanoseconds = [](double seconds) {
    // Capped at ~10 years: a larger double would overflow the nanosecond count.
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(std::min(seconds, 3e8)));
  };
  if (config.timeout_seconds() > 0) wait.timeout = to_nanoseconds(config.timeout_seconds());
  wait.warn_after = config.warn_after_seconds() > 0 ? to_nanoseconds(config.warn_after_seconds())
                                                    : std::chrono::nanoseconds(0);
}

std::string DescribeLaggards(const ClockTable& clocks, model::ComputeIndex except, std::uint64_t needed) {
  std::string out;
  for (int c = 0; c < clocks.compute_ranks(); ++c) {
    if (c == except.value) continue;
    std::uint64_t lowest = UINT64_MAX;
    int at = 0;
    for (int m = 0; m < clocks.memory_ranks(); ++m) {
      const std::uint64_t merged = clocks.merged_clock(model::MemoryIndex{m}, model::ComputeIndex{c});
      if (merged < lowest) {
        lowest = merged;
        at = m;
      }
    }
    if (lowest >= needed) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("compute rank {} (merged clock {}, at memory rank {})", c, lowest, at);
  }
  return out.empty() ? "no compute rank" : out;
}

std::string DescribeSlowestRings(const RingPoller& poller) {
  std::uint64_t slowest = UINT64_MAX, next = UINT64_MAX;
  for (int c = 0; c < poller.compute_ranks(); ++c) slowest = std::min(slowest, poller.merged_clock(model::ComputeIndex{c}));
  std::string behind;
  for (int c = 0; c < poller.compute_ranks(); ++c) {
    const model::ComputeIndex ci{c};
    if (poller.merged_clock(ci) != slowest) {
      next = std::min(next, poller.merged_clock(ci));
      continue;
    }
    if (!behind.empty()) behind += ", ";
    behind += fmt::format("compute rank {} (merged clock {}, {} batches merged)", c, slowest, poller.consumed(ci));
  }
  if (behind.empty()) return "no compute rank";
  if (next == UINT64_MAX) return "behind: " + behind;
  return fmt::format("behind: {}; the others have merged clock >= {}", behind, next);
}

}  // namespace stalelearn::sync
