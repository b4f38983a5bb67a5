#include "framework/runtime/replica_refresher.h"

#include <algorithm>

#include "framework/sync/batch_codec.h"
#include "framework/sync/clock_table.h"

namespace stalelearn::runtime {

ReplicaRefresher::ReplicaRefresher(transport::Transport& transport, const model::ModelLayout& layout,
                                   model::ComputeIndex me, std::vector<const transport::RemoteRegion*> published,
                                   const std::vector<sync::PublishedGeometry>& geometry, sync::WaitOptions wait)
    : layout_(layout), me_(me) {
  std::size_t largest = 0;
  for (std::size_t m = 0; m < published.size(); ++m) {
    readers_.push_back(std::make_unique<sync::SnapshotReader>(transport, *published[m], geometry[m], wait));
    largest = std::max(largest, geometry[m].shard_bytes);
  }
  installed_generation_.assign(published.size(), 0);
  installed_merged_.assign(published.size(), std::vector<std::uint64_t>(geometry.empty() ? 0 : geometry[0].compute_ranks, 0));
  pending_.resize(published.size());
  shard_buffer_.resize(largest);
}

void ReplicaRefresher::AddPending(model::MemoryIndex m, std::uint64_t sequence, std::vector<std::byte> batch) {
  pending_[m.value].push_back(Pending{sequence, std::move(batch)});
}

std::size_t ReplicaRefresher::pending_batches() const {
  std::size_t n = 0;
  for (const auto& p : pending_) n += p.size();
  return n;
}

void ReplicaRefresher::ReplayPending(model::MemoryIndex m, model::TableSet& replica) const {
  for (const Pending& p : pending_[m.value]) {
    sync::ForEachOwnEntry(p.batch, layout_.tables(), [&](model::TableId t, model::RowId r, const std::byte* delta) {
      replica[t.value].AddDelta(r.value, delta);
    });
  }
}

Result<std::uint64_t> ReplicaRefresher::Refresh(model::TableSet& replica) {
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    const model::MemoryIndex m{static_cast<int>(i)};
    const std::span<std::byte> shard(shard_buffer_.data(), layout_.ShardBytes(m));
    STALELEARN_ASSIGN_OR_RETURN(std::optional<sync::SnapshotMeta> meta,
                                readers_[i]->ReadNewer(installed_generation_[i], shard));
    if (!meta) continue;
    layout_.InstallShard(m, shard.data(), replica);
    auto& pending = pending_[i];
    const std::uint64_t included = meta->included[me_.value];
    while (!pending.empty() && pending.front().sequence <= included) pending.pop_front();
    ReplayPending(m, replica);
    installed_generation_[i] = meta->generation;
    installed_merged_[i] = std::move(meta->merged_clock);
  }
  return sync::MinMergedClockOfOthers(installed_merged_, me_);
}

Status ReplicaRefresher::ReadMergedModel(model::TableSet& model) {
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    const model::MemoryIndex m{static_cast<int>(i)};
    const std::span<std::byte> shard(shard_buffer_.data(), layout_.ShardBytes(m));
    STALELEARN_ASSIGN_OR_RETURN(std::optional<sync::SnapshotMeta> meta, readers_[i]->ReadNewer(0, shard));
    if (!meta) return FailedPrecondition("a memory rank has published no snapshot");
    layout_.InstallShard(m, shard.data(), model);
  }
  return Status::Ok();
}

}  // namespace stalelearn::runtime
