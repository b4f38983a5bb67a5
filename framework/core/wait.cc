#include "framework/core/wait.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "framework/core/log.h"

namespace stalelearn {
namespace {

const Backoff::Policy& DefaultPolicy() {
  static const Backoff::Policy policy;  // a function's static: usable during static initialisation too
  return policy;
}

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

std::string Describe(const WaitSpec& spec) { return spec.describe ? spec.describe() : "a condition"; }

}  // namespace

Backoff::Backoff() : Backoff(DefaultPolicy()) {}

Status Backoff::IdleSlowly() {
  if (policy_->on_idle) {
    STALELEARN_ASSIGN_OR_RETURN(const bool waited, policy_->on_idle(hook_rounds_++));
    if (waited) return Status::Ok();
  }
  const std::int64_t round = idle_rounds_++;
  if (round < policy_->spins) return Status::Ok();  // the caller's poll is the spin body
  // Differences, not sums: a policy that spins "forever" (spins = INT64_MAX)
  // must not overflow.
  const std::int64_t past_spins = round - policy_->spins;
  if (past_spins < policy_->yields) {
    std::this_thread::yield();
    return Status::Ok();
  }
  const std::int64_t doublings = std::min<std::int64_t>(past_spins - policy_->yields, 20);
  const auto sleep = std::min<std::chrono::microseconds>(policy_->first_sleep * (std::int64_t{1} << doublings),
                                                         policy_->max_sleep);
  std::this_thread::sleep_for(sleep);
  return Status::Ok();
}

namespace wait_internal {

Status TimedOut(const WaitSpec& spec) {
  return TimeoutError(
      fmt::format("{} timed out after {:.0f} s waiting for {}", spec.who, Seconds(spec.timeout), Describe(spec)));
}

void WarnStall(const WaitSpec& spec, std::chrono::nanoseconds waited) {
  log::Warning("stall: {} has waited {:.1f} s for {}", spec.who, Seconds(waited), Describe(spec));
}

}  // namespace wait_internal
}  // namespace stalelearn
