// The one wait loop of the data plane: polls a condition, progresses the
// transport between polls (a target must progress for one-sided operations
// over tcp to complete), backs off when idle (IdleBackoff: spin, yield,
// sleep; or the timing backend's virtual-time idle), and gives up at the
// deadline with an error that names what it waited for.
//
//   STALELEARN_ASSIGN_OR_RETURN(auto waited, WaitUntil(wait, transport, [&]() -> Result<bool> {
//     STALELEARN_RETURN_IF_ERROR(clocks.Refresh());
//     return clocks.SlowestOther(me).merged_clock >= t;
//   }, [&] { return fmt::format("compute rank {} to merge clock {}", slowest, t); }));
//
// `describe` is called only on timeout, so it may read the latest state.
// Not thread-safe: the calling rank's thread; the transport must outlive it.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "framework/core/status.h"
#include "framework/sync/wait_options.h"
#include "framework/transport/transport.h"

namespace stalelearn::sync {

// Returns the time spent waiting (0 if `done` held at once). kTimeout
// "timed out after N s waiting for <describe()>" past wait.timeout; the
// first error of `done` or of the idle hook.
Result<std::chrono::nanoseconds> WaitUntil(const WaitOptions& wait, transport::Transport& transport,
                                           const std::function<Result<bool>()>& done,
                                           const std::function<std::string()>& describe);

}  // namespace stalelearn::sync
