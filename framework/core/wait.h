// The one wait primitive: every loop that polls for a condition is built from
// the pieces here, so that deadlines, back-off and stall warnings behave
// alike: the data plane's sync::WaitUntil, UCX request completion, the MPI
// progressing allreduce, the bench target, the sweep's child processes, the
// conformance suite's waits (WaitFor), and the memory rank's merge loop
// (Backoff and a restarted Deadline: a work loop, not a wait for one condition).
//
//   Backoff   escalating idle wait: spin, then yield, then sleep with a
//             doubling period (with more ranks than cores, busy polling
//             starves the ranks doing real work: deploy/README.md, ~5x at 8
//             ranks on 2 cores).
//   Deadline  a point in time a wait must not pass (a stalled peer must
//             give an error, never a hang).
//   WaitFor   the loop: done? deadline? stall warning? progress, back off.
//
//   STALELEARN_ASSIGN_OR_RETURN(auto waited, WaitFor(WaitSpec{.timeout = 10s, .who = "rank 3",
//       .describe = [&] { return "the ring's commit word"; }}, [&] { return Committed(); },
//       [&] { transport.Progress(); }));
//
// WaitFor is a template so that the short waits of the transport (a UCX
// put+flush completes in ~0.05 us on shared memory) pay no indirect call per
// poll; the rare paths (timeout error, stall warning, sleeping) are out of line.
// The virtual-time scheduler's turn wait (backends/timing) is not built on
// this: it blocks on a condition variable under the scheduler's lock, it does
// not poll.
//
// Thread-safety: Backoff, Deadline and a WaitSpec belong to one thread at a
// time; WaitFor runs on the calling thread and calls its callbacks there.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "framework/core/status.h"

namespace stalelearn {

class Backoff {
 public:
  struct Policy {
    // Idle rounds that return at once (the caller's poll is the spin body),
    // then rounds that yield the core, then sleeps from first_sleep doubling
    // up to max_sleep.
    std::int64_t spins = 32;
    std::int64_t yields = 32;
    std::chrono::microseconds first_sleep{5};
    std::chrono::microseconds max_sleep{500};
    // If set, called first each round with how often it was called since
    // the last Reset (0: the wait starts): true if it waited (in virtual time an idle
    // rank waits for another rank's progress, not for real time to pass),
    // false to spin or sleep as usual. Its error ends the wait.
    std::function<Result<bool>(std::int64_t round)> on_idle{};
  };

  // The default policy.
  Backoff();
  // Keeps a reference: `policy` must outlive this Backoff.
  explicit Backoff(const Policy& policy) : policy_(&policy) {}
  explicit Backoff(Policy&&) = delete;

  // Call as soon as there is work again: the next idle round spins.
  void Reset() {
    idle_rounds_ = 0;
    hook_rounds_ = 0;
  }

  enum class Phase { kSpin, kYield, kSleep };
  // What the next Idle() does when no on_idle hook waits instead.
  Phase next_phase() const {
    if (idle_rounds_ < policy_->spins) return Phase::kSpin;
    return idle_rounds_ - policy_->spins < policy_->yields ? Phase::kYield : Phase::kSleep;
  }
  // Waits a little longer each call since the last Reset(); the on_idle
  // hook's error if it fails.
  [[nodiscard]] Status Idle() {
    if (!policy_->on_idle && idle_rounds_ < policy_->spins) {  // the hot path of short waits: inline
      ++idle_rounds_;
      return Status::Ok();
    }
    return IdleSlowly();
  }

 private:
  Status IdleSlowly();

  const Policy* policy_;
  std::int64_t idle_rounds_ = 0;  // rounds that spun, yielded or slept
  std::int64_t hook_rounds_ = 0;  // calls of on_idle
};

// Never expires when the timeout is too large to add to the clock's now.
class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Deadline(std::chrono::nanoseconds timeout) : Deadline(Clock::now(), timeout) {}
  Deadline(Clock::time_point start, std::chrono::nanoseconds timeout)
      : timeout_(timeout), end_(timeout >= Clock::time_point::max() - start ? Clock::time_point::max() : start + timeout) {}
  bool Expired() const { return Expired(Clock::now()); }
  bool Expired(Clock::time_point now) const { return now >= end_; }
  // The same timeout from now (a wait limit counted from the last work done).
  void Restart() { *this = Deadline(timeout_); }

 private:
  std::chrono::nanoseconds timeout_;
  Clock::time_point end_;
};

// What a wait is and how it waits. `who` is a view: what it names must
// outlive the WaitFor call.
struct WaitSpec {
  // Past this WaitFor fails with kTimeout "<who> timed out after N s waiting
  // for <describe()>".
  std::chrono::nanoseconds timeout = std::chrono::seconds(300);
  // The stall inspector: once a wait has lasted warn_after, it logs a warning
  // "stall: <who> has waited N s for <describe()>", then again after 2x, 4x,
  // ... that time (a long stall stays visible without flooding the log); 0 =
  // never.
  std::chrono::nanoseconds warn_after{0};
  Backoff::Policy backoff{};
  // Who waits, in messages: "rank 3".
  std::string_view who = "a thread";
  // What it waits for. Called only for a warning and on timeout, so it may
  // read the latest state (for which ranks, their last clocks). Unset: "a
  // condition".
  std::function<std::string()> describe{};
  // For waits whose polls cost less than reading the clock (a UCX request's
  // status, ~0.1 us per put+flush on shared memory): the deadline and the
  // stall warning are checked on every Nth poll that was not done only...
  int polls_per_clock_read = 1;
  // ...and, if false, WaitFor returns 0 instead of the time waited (one clock
  // read fewer). The time waited includes the first poll: sync waits count it
  // as stall time and subtract the work done inside `done`.
  bool measure = true;
};

namespace wait_internal {
// The rare paths of WaitFor, out of line.
Status TimedOut(const WaitSpec& spec);
void WarnStall(const WaitSpec& spec, std::chrono::nanoseconds waited);
}  // namespace wait_internal

// Polls `done` (returns bool or Result<bool>) until true: checked first, so a
// condition that holds at once costs no progress and no back-off. Between
// polls calls `progress` (returns void, bool, Status or Result<bool>; true
// means it did work, and that round does not back off) and then backs off.
// Returns the time waited (0 if !spec.measure); kTimeout past spec.timeout; the first error of
// `done`, `progress` or the back-off's on_idle hook. `spec` must outlive the call.
template <class Done, class Progress>
Result<std::chrono::nanoseconds> WaitFor(const WaitSpec& spec, Done&& done, Progress&& progress) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Deadline deadline(start, spec.timeout);
  Backoff backoff(spec.backoff);
  std::chrono::nanoseconds next_warning = spec.warn_after;
  for (int until_clock_read = spec.polls_per_clock_read;;) {
    bool ready = false;
    if constexpr (std::is_same_v<std::invoke_result_t<Done&>, bool>) {
      ready = done();
    } else {
      STALELEARN_ASSIGN_OR_RETURN(ready, done());
    }
    if (ready) {
      if (!spec.measure) return std::chrono::nanoseconds(0);
      return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start);
    }
    if (--until_clock_read <= 0) {
      until_clock_read = spec.polls_per_clock_read;
      const Clock::time_point now = Clock::now();
      if (deadline.Expired(now)) return wait_internal::TimedOut(spec);
      const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(now - start);
      if (next_warning.count() > 0 && waited >= next_warning) {
        wait_internal::WarnStall(spec, waited);
        next_warning *= 2;
      }
    }
    bool worked = false;
    using Progressed = std::invoke_result_t<Progress&>;
    if constexpr (std::is_void_v<Progressed>) {
      progress();
    } else if constexpr (std::is_same_v<Progressed, bool>) {
      worked = progress();
    } else if constexpr (std::is_same_v<Progressed, Status>) {
      STALELEARN_RETURN_IF_ERROR(progress());
    } else {
      STALELEARN_ASSIGN_OR_RETURN(worked, progress());
    }
    if (!worked) STALELEARN_RETURN_IF_ERROR(backoff.Idle());
  }
}

// A wait with nothing to progress: only backs off between polls.
template <class Done>
Result<std::chrono::nanoseconds> WaitFor(const WaitSpec& spec, Done&& done) {
  return WaitFor(spec, std::forward<Done>(done), [] {});
}

}  // namespace stalelearn
