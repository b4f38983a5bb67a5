// A compute rank's view of every memory rank's control block, read one-sided
// (I6): per compute rank the merged clock and included sequence of the latest
// snapshot, the ring heads, and the latest snapshot generation.
//
// Not thread-safe (one compute-rank thread). The transport and the remote
// regions must outlive it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/core/status.h"
#include "framework/model/rank_index.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/wait_options.h"
#include "framework/transport/transport.h"

namespace stalelearn::sync {

class ClockTable {
 public:
  // published[m]: memory rank m's published region.
  ClockTable(transport::Transport& transport, std::vector<const transport::RemoteRegion*> published,
             PublishedGeometry geometry, WaitOptions wait);

  // Fetches every control block (gets issued together, then awaited). With a
  // simulated clock, then advances it to when the latest publication read can
  // have arrived. Blocking.
  Status Refresh();
  // Refresh of the control blocks of the memory ranks with `which[m]` != 0
  // only (the others keep what was read before): a poll about rows those
  // ranks alone hold (a stratified stripe's writer) at a fraction of the gets.
  Status RefreshOnly(std::span<const std::uint8_t> which);
  // RefreshOnly in two halves, for a poll that must not wait a round trip
  // (a stratified rank's ask whether its next stripe's writer is done,
  // runtime/stripe_read_ahead.h): BeginRefreshOnly issues the gets;
  // TakeRefresh tests them without blocking (with `wait`, waits for them)
  // and, once all are in, does what RefreshOnly does after its wait and
  // returns true (false: in flight). The words read are undefined while
  // refreshing(). RefreshOnly may not run while refreshing(); Settle waits
  // for a begun refresh and forgets it.
  Status BeginRefreshOnly(std::span<const std::uint8_t> which);
  Result<bool> TakeRefresh(bool wait = false);
  bool refreshing() const { return !requests_.empty(); }
  Status Settle();
  // A table of its own over the same control blocks (nothing read yet): a
  // poll with a refresh in flight beside this table's.
  ClockTable Twin() const { return ClockTable(transport_, published_, geometry_, wait_); }

  int memory_ranks() const { return static_cast<int>(published_.size()); }
  int compute_ranks() const { return geometry_.compute_ranks; }
  std::uint64_t latest_generation(model::MemoryIndex m) const { return Word(m, geometry_.latest_generation_offset()); }
  // The newest generation whose live rows are all written (snapshot.h).
  std::uint64_t live_generation(model::MemoryIndex m) const { return Word(m, geometry_.live_generation_offset()); }
  std::uint64_t head(model::MemoryIndex m, model::ComputeIndex c) const { return Word(m, geometry_.head_offset(c)); }
  std::uint64_t merged_clock(model::MemoryIndex m, model::ComputeIndex c) const {
    return Word(m, geometry_.merged_clock_offset(c));
  }
  std::uint64_t included(model::MemoryIndex m, model::ComputeIndex c) const {
    return Word(m, geometry_.included_offset(c));
  }

  // The compute rank (other than `except`) with the lowest merged clock over
  // all memory ranks, and that clock. {except, UINT64_MAX} if there is none.
  struct Slowest {
    model::ComputeIndex rank;
    std::uint64_t merged_clock;
    model::MemoryIndex memory{0};  // the memory rank that reported that clock
  };
  // `which`: only the memory ranks with which[m] != 0 (empty: all).
  Slowest SlowestOther(model::ComputeIndex except, std::span<const std::uint8_t> which = {}) const;
  // Compute rank `rank`'s lowest merged clock over all memory ranks (or
  // those of `which`).
  Slowest SlowestOf(model::ComputeIndex rank, std::span<const std::uint8_t> which = {}) const;
  // Tells the rank's time service that the caller's wait cannot end before
  // `slowest`'s merged clock moves (RankTime::WaitOnlyFor), so that a virtual
  // clock sleeps through the other ranks' merges. Call after a Refresh.
  void WaitOnlyFor(const Slowest& slowest) const;

 private:
  // Whether a `which` mask (RefreshOnly, SlowestOf) takes memory rank m: an
  // empty mask takes all.
  static bool Selects(std::span<const std::uint8_t> which, std::size_t m);
  std::uint64_t Word(model::MemoryIndex m, std::size_t offset) const;
  // After the gets of the selected blocks completed: the clock advanced to
  // when the latest publication read can have arrived.
  Status Took();

  transport::Transport& transport_;
  std::vector<const transport::RemoteRegion*> published_;
  PublishedGeometry geometry_;
  WaitOptions wait_;
  std::vector<std::vector<std::byte>> blocks_;  // [m] control block bytes
  std::vector<transport::RequestPtr> requests_;  // the gets of the refresh in flight
  std::vector<std::uint8_t> which_;              // its selection (empty: all)
};

// The compute rank whose clocks a wait of rank `me` leaves out: itself (its
// own deltas are in its replica, I2), or none (-1) when its own clocks count
// too (a merge that is not master += delta, runtime/merge_config.h).
inline model::ComputeIndex NotWaitedFor(model::ComputeIndex me, bool counts_own_clocks) {
  return counts_own_clocks ? model::ComputeIndex{-1} : me;
}

// Slowest over snapshot metas (what a replica actually installed).
std::uint64_t MinMergedClockOfOthers(const std::vector<std::vector<std::uint64_t>>& merged_clock_by_memory,
                                     model::ComputeIndex except);
// The same over one meta's merged clocks.
std::uint64_t MinMergedClockOfOthers(std::span<const std::uint64_t> merged_clock, model::ComputeIndex except);

}  // namespace stalelearn::sync
