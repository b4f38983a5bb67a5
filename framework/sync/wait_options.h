// How long blocking waits of the sync layer may take, how they idle, and the
// rank's simulated clock. Value type.
#pragma once

#include <chrono>
#include <functional>

#include "framework/core/status.h"
#include "framework/core/wait.h"
#include "framework/transport/virtual_time.h"

namespace stalelearn::sync {

struct WaitOptions {
  // A wait that exceeds this fails with kTimeout naming what it waited for
  // (a stalled peer must give an error, never a hang).
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);
  // The stall inspector: a wait longer than this prints (stderr, log warning)
  // what it waits for, then again at doubling intervals; 0 = never
  // (config: wait.warn_after_seconds).
  std::chrono::nanoseconds warn_after{0};
  Backoff::Policy backoff;
  // The rank's simulated clock when the backend simulates time (timing
  // backend), else nullptr: stamps what this rank sends, advances to the
  // stamps of what it reads. Not owned; outlives the waits.
  transport::SimulatedTime* sim = nullptr;
  // Called between polls while a wait is not yet done (the run's stop
  // agreement joins from here: runtime/stop_agreement.h); its error ends the
  // wait. Unset: nothing.
  std::function<Status()> while_waiting;
};

}  // namespace stalelearn::sync
