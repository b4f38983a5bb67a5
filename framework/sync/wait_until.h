// The data plane's wait: WaitFor (framework/core/wait.h) with the rank's
// WaitOptions. Polls a condition, progresses the transport between polls (a
// target must progress for one-sided operations over tcp to complete), backs
// off when idle (Backoff: spin, yield, sleep; or the timing backend's
// virtual-time idle), and gives up at the deadline with an error that names
// what it waited for.
//
//   STALELEARN_ASSIGN_OR_RETURN(auto waited, WaitUntil(wait, transport, [&]() -> Result<bool> {
//     STALELEARN_RETURN_IF_ERROR(clocks.Refresh());
//     return clocks.SlowestOther(me).merged_clock >= t;
//   }, [&] { return fmt::format("merged clock: {}", DescribeLaggards(clocks, me, t)); }));
//
// The stall inspector: once a wait has lasted wait.warn_after, it logs a
// warning "stall: rank R has waited N s for <describe()>", then again after
// 2x, 4x, ... that time, so a long stall stays visible without flooding the
// log. `describe` is called only then and on timeout, so it may read the
// latest state: it should say on what the rank waits (merged clock, ring
// space, snapshot), for which ranks, and their last clocks.
// Not thread-safe: the calling rank's thread; the transport must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "framework/core/status.h"
#include "framework/model/rank_index.h"
#include "framework/proto/config.pb.h"
#include "framework/sync/clock_table.h"
#include "framework/sync/ring_poller.h"
#include "framework/sync/wait_options.h"
#include "framework/transport/transport.h"

namespace stalelearn::sync {

// Returns the time spent waiting (0 if `done` held at once). kTimeout
// "rank R timed out after N s waiting for <describe()>" past wait.timeout;
// the first error of `done` or of the idle hook.
Result<std::chrono::nanoseconds> WaitUntil(const WaitOptions& wait, transport::Transport& transport,
                                           const std::function<Result<bool>()>& done,
                                           const std::function<std::string()>& describe);

// Sets wait.timeout (when config.timeout_seconds > 0) and wait.warn_after
// (config.warn_after_seconds; negative or 0: never) from a resolved config.
void ApplyWaitConfig(const proto::WaitConfig& config, WaitOptions& wait);

// For describe functions: the compute ranks other than `except` whose merged
// clock (lowest over the memory ranks, as last read) is below `needed`,
// "compute rank 2 (merged clock 3, at memory rank 0), compute rank 5 (...)",
// or "no compute rank" if none is.
std::string DescribeLaggards(const ClockTable& clocks, model::ComputeIndex except, std::uint64_t needed);

// For a memory rank's describe: the compute ranks with the lowest merged
// clock in its rings, "behind: compute rank 1 (merged clock 2, 5 batches
// merged); the others have merged clock >= 3".
std::string DescribeSlowestRings(const RingPoller& poller);

}  // namespace stalelearn::sync
