// How long blocking waits of the sync layer may take, how they idle, and the
// rank's time service. Value type.
#pragma once

#include <chrono>
#include <functional>

#include "framework/core/status.h"
#include "framework/core/wait.h"
#include "framework/transport/rank_time.h"

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
  // The rank's time service (transport/rank_time.h), never null: stamps what
  // this rank sends, advances to the stamps of what it reads (both free in
  // real time, the default). Not owned; outlives the waits.
  transport::RankTime* time = &transport::RealTime::Instance();
  // Called between polls while a wait is not yet done (the run's stop
  // agreement joins from here: runtime/stop_agreement.h); its error ends the
  // wait. Unset: nothing.
  std::function<Status()> while_waiting;
};

}  // namespace stalelearn::sync
