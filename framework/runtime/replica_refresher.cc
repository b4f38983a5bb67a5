#include "framework/runtime/replica_refresher.h"

#include <algorithm>
#include <cstring>

#include "framework/sync/batch_codec.h"
#include "framework/sync/clock_table.h"

namespace stalelearn::runtime {

ReplicaRefresher::ReplicaRefresher(transport::Transport& transport, const model::ModelLayout& layout,
                                   model::ComputeIndex me, std::vector<const transport::RemoteRegion*> published,
                                   const std::vector<sync::PublishedGeometry>& geometry, sync::WaitOptions wait)
    : layout_(layout), me_(me) {
  const std::size_t compute = geometry.empty() ? 0 : static_cast<std::size_t>(geometry[0].compute_ranks);
  for (std::size_t m = 0; m < published.size(); ++m) {
    readers_.push_back(std::make_unique<sync::SnapshotReader>(transport, *published[m], geometry[m], wait));
    // Rows only this rank changed since the generation held (merged as
    // master += delta) hold master + own pending deltas already: not read.
    readers_.back()->set_own_writer(sync::WriterOf(me));
  }
  installed_.resize(published.size());
  installed_merged_.assign(published.size(), std::vector<std::uint64_t>(compute, 0));
  pending_.resize(published.size());
}

void ReplicaRefresher::AddPending(model::MemoryIndex m, std::uint64_t sequence, std::vector<std::byte> batch) {
  pending_[m.value].push_back(Pending{sequence, std::move(batch)});
}

std::size_t ReplicaRefresher::pending_batches() const {
  std::size_t n = 0;
  for (const auto& p : pending_) n += p.size();
  return n;
}

std::optional<ReplicaRefresher::TableSpan> ReplicaRefresher::TableAt(model::MemoryIndex m, std::size_t offset) const {
  const std::vector<model::TableSpec>& tables = layout_.tables();
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const model::TableId table{static_cast<std::uint32_t>(t)};
    const std::size_t row_bytes = tables[t].row_bytes();
    const std::size_t first = layout_.TableOffset(m, table);
    const std::size_t last = first + static_cast<std::size_t>(layout_.partition(table).ShardRows(m)) * row_bytes;
    if (offset < last) return TableSpan{table, first, last, row_bytes};
  }
  return std::nullopt;
}

std::int64_t ReplicaRefresher::SlotAt(model::MemoryIndex m, const TableSpan& span, std::size_t offset,
                                      const model::Replica& replica) const {
  const auto local = static_cast<std::int64_t>((offset - span.first) / span.row_bytes);
  return replica.SlotOf(span.table, layout_.partition(span.table).GlobalRow(m, local));
}

void ReplicaRefresher::Install(model::MemoryIndex m, std::size_t offset, std::span<const std::byte> bytes,
                               model::Replica& replica) {
  model::TableSet& values = replica.mutable_tables();
  const std::size_t start = offset;
  const std::size_t end = offset + bytes.size();
  while (offset < end) {
    const std::optional<TableSpan> span = TableAt(m, offset);
    if (!span) return;
    std::vector<std::uint32_t>& stamps = installed_in_[span->table.value];
    for (; offset < end && offset < span->last; offset += span->row_bytes) {
      const std::int64_t slot = SlotAt(m, *span, offset, replica);
      if (slot < 0) continue;
      std::memcpy(values[span->table.value].RowBytes(slot), bytes.data() + (offset - start), span->row_bytes);
      stamps[static_cast<std::size_t>(slot)] = refresh_number_;
      ++counters_.rows_installed;
      counters_.bytes_installed += span->row_bytes;
    }
  }
}

std::int64_t ReplicaRefresher::Pick(model::MemoryIndex m, std::size_t offset, std::size_t bytes,
                                    const model::Replica& replica) const {
  const std::optional<TableSpan> span = TableAt(m, offset);
  if (!span) return sync::SnapshotReader::kNotPicked;
  if (bytes != span->row_bytes) return sync::SnapshotReader::kAnyRecord;  // several rows (a whole-shard publish)
  const std::int64_t slot = SlotAt(m, *span, offset, replica);
  // The row's shard offset names it: one id per row, whatever the table.
  return slot < 0 ? sync::SnapshotReader::kNotPicked : static_cast<std::int64_t>(offset);
}

void ReplicaRefresher::ReplayPending(model::MemoryIndex m, model::Replica& replica) const {
  model::TableSet& values = replica.mutable_tables();
  for (const Pending& p : pending_[m.value]) {
    sync::ForEachOwnEntry(p.batch, layout_.tables(), [&](model::TableId t, model::RowId r, const std::byte* delta) {
      const std::int64_t slot = replica.SlotOf(t, r);
      // Only rows this refresh rewrote lack the delta (header comment).
      if (slot >= 0 && installed_in_[t.value][static_cast<std::size_t>(slot)] == refresh_number_) {
        values[t.value].AddDelta(slot, delta);
      }
    });
  }
}

void ReplicaRefresher::DropIncluded(model::MemoryIndex m, std::uint64_t included) {
  auto& pending = pending_[m.value];
  while (!pending.empty() && pending.front().sequence <= included) {
    if (dropped_.size() < kKeptDropped) dropped_.push_back(std::move(pending.front().batch));
    pending.pop_front();
  }
}

void ReplicaRefresher::TakeDropped(std::vector<std::vector<std::byte>>& out) {
  for (auto& batch : dropped_) out.push_back(std::move(batch));
  dropped_.clear();
}

Result<std::uint64_t> ReplicaRefresher::Refresh(model::Replica& replica) {
  if (installed_in_.empty()) {
    for (const model::RowBlock& block : replica.tables()) installed_in_.emplace_back(block.rows(), 0);
  }
  ++refresh_number_;
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    const model::MemoryIndex m{static_cast<int>(i)};
    const std::uint64_t whole_before = readers_[i]->whole_reads();
    const sync::SnapshotReader::RecordPicker picker{
        [&](std::size_t offset, std::size_t bytes) { return Pick(m, offset, bytes, replica); }};
    STALELEARN_ASSIGN_OR_RETURN(
        const sync::SnapshotMeta* meta,
        readers_[i]->ReadPickedChanges(installed_[i], picker, [&](std::size_t offset, std::span<const std::byte> bytes) {
          Install(m, offset, bytes, replica);
        }, &pick_scratch_));
    counters_.whole_reads += readers_[i]->whole_reads() - whole_before;
    if (meta == nullptr) continue;
    DropIncluded(m, meta->included[me_.value]);
    ReplayPending(m, replica);
    installed_[i].generation = meta->generation;
    installed_[i].log_end = meta->log_end;
    installed_[i].index_end = meta->index_end;
    installed_merged_[i].assign(meta->merged_clock.begin(), meta->merged_clock.end());
  }
  return sync::MinMergedClockOfOthers(installed_merged_, me_);
}

Status ReplicaRefresher::ReadMergedModel(model::TableSet& model) {
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    const model::MemoryIndex m{static_cast<int>(i)};
    shard_buffer_.resize(layout_.ShardBytes(m));
    STALELEARN_ASSIGN_OR_RETURN(std::optional<sync::SnapshotMeta> meta, readers_[i]->ReadNewer(0, shard_buffer_));
    if (!meta) return FailedPrecondition("a memory rank has published no snapshot");
    layout_.InstallShard(m, shard_buffer_.data(), model);
  }
  return Status::Ok();
}

}  // namespace stalelearn::runtime
