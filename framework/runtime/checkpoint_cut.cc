#include "framework/runtime/checkpoint_cut.h"

#include <algorithm>

namespace stalelearn::runtime {

proto::MemoryShardState ShardStateOf(const sync::ShardMerger& merger, std::uint64_t clock,
                                     const std::vector<std::uint64_t>& merged_clocks,
                                     const std::vector<std::uint64_t>& consumed_batches) {
  proto::MemoryShardState state;
  state.set_clock(clock);
  const model::TableSet& master = merger.master();
  for (std::size_t t = 0; t < master.size(); ++t) {
    const std::span<const std::byte> rows = master[t].bytes();
    state.add_tables(reinterpret_cast<const char*>(rows.data()), rows.size());
    const std::vector<std::byte> policy = merger.policy(model::TableId{static_cast<std::uint32_t>(t)}).SaveState();
    state.add_policy_state(reinterpret_cast<const char*>(policy.data()), policy.size());
  }
  for (std::uint64_t merged : merged_clocks) state.add_merged_clock(merged);
  for (std::uint64_t consumed : consumed_batches) state.add_consumed_batches(consumed);
  return state;
}

CheckpointCut::CheckpointCut(const sync::ShardMerger& live, const sync::RingPoller& poller, CheckpointClocks clocks,
                             Writer writer)
    : live_(live), poller_(poller), clocks_(clocks), writer_(std::move(writer)), next_(clocks.After(clocks.first)) {}

void CheckpointCut::BeforeMerge(model::ComputeIndex from, const sync::DecodedBatch& batch) {
  const auto clock = static_cast<std::int64_t>(batch.header.clock);
  // The first batch past a cut not yet forked: fork the shard before it.
  for (std::int64_t cut = pending_.empty() ? next_ : pending_.back().clock + clocks_.every;
       cut <= clock && cut < clocks_.total; cut += clocks_.every) {
    const auto ranks = static_cast<std::size_t>(poller_.compute_ranks());
    pending_.push_back({cut, live_.Fork(), std::vector<std::uint64_t>(ranks)});
    ++forks_;
  }
  for (Pending& p : pending_) {
    if (clock < p.clock) {
      // What the live shard does with it, the fork does too; a batch the
      // live merge rejects is rejected alike, and a divergence stops the run.
      (void)p.fork->Merge(batch);
    } else {
      ++p.past[static_cast<std::size_t>(from.value)];
    }
  }
}

void CheckpointCut::WindowBegins() {
  for (Pending& p : pending_) p.fork->BeginWindow();
}

void CheckpointCut::WindowEnds() {
  for (Pending& p : pending_) (void)p.fork->EndWindow();
}

Status CheckpointCut::WriteCompleted() {
  const auto ranks = static_cast<std::size_t>(poller_.compute_ranks());
  while (next_ < clocks_.total) {
    if (poller_.slowest_merged_clock() < static_cast<std::uint64_t>(next_)) return Status::Ok();
    const bool forked = !pending_.empty() && pending_.front().clock == next_;
    std::vector<std::uint64_t> merged(ranks);
    std::vector<std::uint64_t> consumed(ranks);
    for (std::size_t c = 0; c < ranks; ++c) {
      const model::ComputeIndex rank{static_cast<int>(c)};
      merged[c] = poller_.dead(rank) ? sync::RingPoller::kDeadClock : static_cast<std::uint64_t>(next_);
      consumed[c] = poller_.consumed(rank) - (forked ? pending_.front().past[c] : 0);
    }
    const proto::MemoryShardState state =
        ShardStateOf(forked ? *pending_.front().fork : live_, static_cast<std::uint64_t>(next_), merged, consumed);
    if (forked) pending_.pop_front();
    const std::int64_t clock = next_;
    next_ += clocks_.every;
    STALELEARN_RETURN_IF_ERROR(writer_(clock, state));
  }
  return Status::Ok();
}

}  // namespace stalelearn::runtime
