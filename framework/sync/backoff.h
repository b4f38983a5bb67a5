// Escalating idle wait for polling loops: spin, then yield, then sleep with a
// doubling period. With more ranks than cores, busy polling starves the ranks
// doing real work; yielding and sleeping when idle fixed that (deploy/README.md: ~5x
// at 8 ranks on 2 cores). Reset() as soon as there is work again.
// A policy's on_idle hook (the timing backend's IdleUntilProgress under its
// virtual-time scheduler) is called first and may do the waiting instead;
// Idle() returns its error, which must end the caller's loop.
// Not thread-safe: one per polling thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>

#include "framework/core/status.h"

namespace stalelearn::sync {

class IdleBackoff {
 public:
  struct Policy {
    int spins = 32;
    int yields = 32;
    std::chrono::microseconds first_sleep{5};
    std::chrono::microseconds max_sleep{500};
    // If set, called first each round: true if it waited (in virtual time an
    // idle rank waits for another rank's progress, not for real time to
    // pass), false to spin or sleep as usual.
    std::function<Result<bool>()> on_idle;
  };
  IdleBackoff() : IdleBackoff(Policy{}) {}
  explicit IdleBackoff(Policy policy) : policy_(std::move(policy)) {}

  void Reset() { idle_rounds_ = 0; }
  // Waits a little longer each call since the last Reset(); the on_idle
  // hook's error if it fails.
  [[nodiscard]] Status Idle();

 private:
  Policy policy_;
  std::int64_t idle_rounds_ = 0;
};

// A deadline for waits that must not hang (framework/README.md, convention 11).
class Deadline {
 public:
  explicit Deadline(std::chrono::nanoseconds timeout) : end_(std::chrono::steady_clock::now() + timeout) {}
  bool Expired() const { return std::chrono::steady_clock::now() >= end_; }

 private:
  std::chrono::steady_clock::time_point end_;
};

}  // namespace stalelearn::sync
