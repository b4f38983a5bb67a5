// How long blocking waits of the sync layer may take and how they idle.
// Value type.
#pragma once

#include <chrono>

#include "framework/sync/backoff.h"

namespace stalelearn::sync {

struct WaitOptions {
  // A wait that exceeds this fails with kTimeout naming what it waited for
  // (a stalled peer must give an error, never a hang).
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);
  IdleBackoff::Policy backoff;
};

}  // namespace stalelearn::sync
