// The SSP rule (I1): a compute rank may start clock t only when every other
// compute rank's clocks 0..t-s-1 are merged, i.e. each merged clock (count of
// merged clocks) is >= t - s. s = 0 is BSP; an unbounded gate is ASP. With
// `counts_own_clocks` the rank's own clocks count too (a merge that is not
// master += delta: the replica's raw own deltas are not what the master made
// of them, runtime/merge_config.h MergesAddDeltas).
//
//   StalenessGate gate(clocks, me, StalenessBound::Of(2), transport, wait);
//   STALELEARN_ASSIGN_OR_RETURN(auto stalled, gate.WaitUntilAllowed(t));
//
// Not thread-safe (the compute rank's trainer thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "framework/core/planted_defect.h"
#include "framework/sync/clock_table.h"

namespace stalelearn::sync {

class StalenessBound {
 public:
  static StalenessBound Of(int s) { return StalenessBound(s); }
  static StalenessBound Unbounded() { return StalenessBound(std::nullopt); }

  bool bounded() const { return s_.has_value(); }
  int value() const { return s_.value_or(-1); }
  // May clock `clock` start when the slowest other rank has merged `merged` clocks?
  bool Allows(std::uint64_t clock, std::uint64_t merged) const {
    if (!s_) return true;
    // Planted defect (self-tests only): the bound is s + 1.
    const auto s = static_cast<std::uint64_t>(*s_) + (DefectPlanted(PlantedDefect::kStalenessBoundOffByOne) ? 1 : 0);
    // Written without merged + s: merged is UINT64_MAX when there are no others.
    return merged >= clock || clock - merged <= s;
  }

 private:
  explicit StalenessBound(std::optional<int> s) : s_(s) {}
  std::optional<int> s_;
};

class StalenessGate {
 public:
  StalenessGate(ClockTable& clocks, model::ComputeIndex me, StalenessBound bound, transport::Transport& transport,
                WaitOptions wait, bool counts_own_clocks = false);

  StalenessBound bound() const { return bound_; }
  // Blocks (reading control blocks one-sided, progressing, backing off) until
  // clock `clock` may start. Returns the time waited. kTimeout names the rank
  // everyone waits for.
  Result<std::chrono::nanoseconds> WaitUntilAllowed(std::uint64_t clock);

 private:
  ClockTable& clocks_;
  model::ComputeIndex me_;
  model::ComputeIndex except_;  // the rank not waited for: me_, or none (-1) when own clocks count
  StalenessBound bound_;
  transport::Transport& transport_;
  WaitOptions wait_;
};

}  // namespace stalelearn::sync
