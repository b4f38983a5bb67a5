#include "framework/runtime/replica_refresher.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "framework/core/planted_defect.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/clock_table.h"

namespace stalelearn::runtime {

ReplicaRefresher::ReplicaRefresher(transport::Transport& transport, const model::ModelLayout& layout,
                                   model::ComputeIndex me, std::vector<const transport::RemoteRegion*> published,
                                   const std::vector<sync::PublishedGeometry>& geometry, sync::WaitOptions wait)
    : layout_(layout), me_(me), operation_cost_bytes_(transport.capabilities().operation_cost_bytes) {
  const std::size_t compute = geometry.empty() ? 0 : static_cast<std::size_t>(geometry[0].compute_ranks);
  for (std::size_t m = 0; m < published.size(); ++m) {
    readers_.push_back(std::make_unique<sync::SnapshotReader>(transport, *published[m], geometry[m], wait));
    // Rows only this rank changed since the generation held (merged as
    // master += delta) hold master + own pending deltas already: not read.
    readers_.back()->set_own_writer(sync::WriterOf(me));
  }
  // Each table's rows in each shard, and the exact division by its row size.
  spans_.resize(published.size());
  for (std::size_t m = 0; m < published.size(); ++m) {
    const model::MemoryIndex mi{static_cast<int>(m)};
    for (std::size_t t = 0; t < layout_.tables().size(); ++t) {
      const model::TableId table{static_cast<std::uint32_t>(t)};
      const model::RowPartition& partition = layout_.partition(table);
      TableSpan span{table, layout_.TableOffset(mi, table), 0, layout_.tables()[t].row_bytes()};
      span.last = span.first + static_cast<std::size_t>(partition.ShardRows(mi)) * span.row_bytes;
      span.shift = std::countr_zero(span.row_bytes);
      const std::uint64_t odd = span.row_bytes >> span.shift;
      for (int i = 0; i < 6; ++i) span.inverse *= 2 - odd * span.inverse;  // Newton: 1, 2, 4, ... 64 bits
      if (partition.ShardRows(mi) > 0) {
        span.row_base = partition.GlobalRow(mi, 0).value;
        if (partition.ShardRows(mi) > 1) span.row_stride = partition.GlobalRow(mi, 1).value - span.row_base;
      }
      spans_[m].push_back(span);
    }
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

bool ReplicaRefresher::PendingNames(model::TableId table, std::int64_t first, std::int64_t last) const {
  bool named = false;
  for (const auto& pending : pending_) {
    for (const Pending& p : pending) {
      sync::ForEachOwnEntry(p.batch, layout_.tables(), [&](model::TableId t, model::RowId r, const std::byte*) {
        named = named || (t == table && r.value >= first && r.value < last);
      });
      if (named) return true;
    }
  }
  return false;
}

void ReplicaRefresher::Install(model::MemoryIndex m, std::size_t offset, std::span<const std::byte> bytes,
                               model::Replica& replica) {
  const std::size_t start = offset;
  const std::size_t end = offset + bytes.size();
  while (offset < end) {
    const TableSpan* span = TableAt(m, offset);
    if (span == nullptr) return;
    for (; offset < end && offset < span->last; offset += span->row_bytes) {
      const std::int64_t slot = SlotAt(*span, offset, replica);
      if (slot >= 0) InstallRow(span->table, slot, bytes.subspan(offset - start, span->row_bytes), replica);
    }
  }
}

void ReplicaRefresher::InstallRow(model::TableId table, std::int64_t slot, std::span<const std::byte> row,
                                  model::Replica& replica) {
  // A row with a delta the replica keeps (a table written alone, whose
  // deltas wait for the epoch's end: ssp_mode.cc) holds master plus all
  // own deltas already; the master's value would lose the kept ones.
  if (replica.Undrained(table, slot)) return;
  std::memcpy(replica.mutable_tables()[table.value].RowBytes(slot), row.data(), row.size());
  replica.NoteWritten(table, slot);  // ReplayPending writes only installed rows too
  installed_in_[table.value][static_cast<std::size_t>(slot)] = refresh_number_;
  ++counters_.rows_installed;
  counters_.bytes_installed += row.size();
}

std::int64_t ReplicaRefresher::Pick(model::MemoryIndex m, std::size_t offset, std::size_t bytes,
                                    const model::Replica& replica) const {
  const TableSpan* span = TableAt(m, offset);
  if (span == nullptr) return sync::SnapshotReader::kNotPicked;
  if (bytes != span->row_bytes) return sync::SnapshotReader::kAnyRecord;  // several rows (a whole-shard publish)
  if (focus_first_ >= 0 && span->table == focus_table_) {
    const std::int64_t row = span->GlobalRow(offset);
    if (row < focus_first_ || row >= focus_last_) return sync::SnapshotReader::kNotPicked;  // out of focus
  }
  const std::int64_t slot = SlotAt(*span, offset, replica);
  // Dense ids, one per replica slot over all tables (RecordPicker::id_count).
  return slot < 0 ? sync::SnapshotReader::kNotPicked
                  : static_cast<std::int64_t>(first_id_[span->table.value]) + slot;
}

void ReplicaRefresher::InstallPicked(model::MemoryIndex m, std::int64_t id, std::size_t offset,
                                     std::span<const std::byte> bytes, model::Replica& replica) {
  const model::TableId table = TableAt(m, offset)->table;  // Pick gave an id: the offset is inside a span
  // Pick's id: that table's slot.
  InstallRow(table, id - static_cast<std::int64_t>(first_id_[table.value]), bytes, replica);
}

void ReplicaRefresher::PrefetchPick(model::MemoryIndex m, std::size_t offset, std::size_t bytes,
                                    const model::Replica& replica) const {
  const TableSpan* span = TableAt(m, offset);
  if (span == nullptr || bytes != span->row_bytes) return;
  replica.PrefetchSlotOf(span->table, model::RowId{span->GlobalRow(offset)});
}

void ReplicaRefresher::ReplayPending(model::MemoryIndex m, model::Replica& replica) const {
  model::TableSet& values = replica.mutable_tables();
  for (const Pending& p : pending_[m.value]) {
    // A batch of row values (the rank is the rows' one writer) sets them.
    const bool written = (sync::OwnBatchFlags(p.batch) & sync::kRowValues) != 0;
    sync::ForEachOwnEntry(p.batch, layout_.tables(), [&](model::TableId t, model::RowId r, const std::byte* delta) {
      const std::int64_t slot = replica.SlotOf(t, r);
      // Only rows this refresh rewrote lack the delta (header comment).
      if (slot >= 0 && installed_in_[t.value][static_cast<std::size_t>(slot)] == refresh_number_) {
        if (written) {
          model::CopyRow(values[t.value].RowBytes(slot), delta, values[t.value].row_bytes());
        } else {
          values[t.value].AddDelta(slot, delta);
        }
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

void ReplicaRefresher::NumberSlots(const model::Replica& replica) {
  if (!installed_in_.empty()) return;
  for (const model::RowBlock& block : replica.tables()) {
    installed_in_.emplace_back(block.rows(), 0);
    first_id_.push_back(id_count_);
    id_count_ += static_cast<std::size_t>(block.rows());
  }
}

Result<std::uint64_t> ReplicaRefresher::Refresh(model::Replica& replica) {
  STALELEARN_RETURN_IF_ERROR(DropPrefetch());  // the readers serve one read at a time
  NumberSlots(replica);
  ++refresh_number_;
  // Memory ranks with nothing to read but the meta: all their metas at once.
  meta_only_readers_.clear();
  meta_only_since_.clear();
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    if (ReadsRecords(i, replica)) continue;
    meta_only_readers_.push_back(readers_[i].get());
    meta_only_since_.push_back(installed_[i].generation);
  }
  meta_only_metas_.resize(meta_only_readers_.size());
  STALELEARN_RETURN_IF_ERROR(
      sync::SnapshotReader::ReadNewerMetas(meta_only_readers_, meta_only_since_, meta_only_metas_));
  std::size_t next_meta = 0;
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    const model::MemoryIndex m{static_cast<int>(i)};
    const std::uint64_t whole_before = readers_[i]->whole_reads();
    const sync::SnapshotReader::RecordPicker picker{
        [&](std::size_t offset, std::size_t bytes) { return Pick(m, offset, bytes, replica); }, id_count_,
        [&](std::size_t offset, std::size_t bytes) { PrefetchPick(m, offset, bytes, replica); },
        [&](std::int64_t id, std::size_t offset, std::span<const std::byte> bytes) {
          InstallPicked(m, id, offset, bytes, replica);
        }};
    const sync::SnapshotMeta* meta = nullptr;
    if (next_meta < meta_only_readers_.size() && meta_only_readers_[next_meta] == readers_[i].get()) {
      meta = meta_only_metas_[next_meta++];
      ++counters_.meta_only_reads;
    } else if (installed_[i].generation == 0) {
      STALELEARN_ASSIGN_OR_RETURN(meta, ReadHeldRows(m, replica));
    } else {
      STALELEARN_ASSIGN_OR_RETURN(
          meta, readers_[i]->ReadPickedChanges(installed_[i], picker,
                                               [&](std::size_t offset, std::span<const std::byte> bytes) {
                                                 Install(m, offset, bytes, replica);
                                               },
                                               &pick_scratch_));
    }
    counters_.whole_reads += readers_[i]->whole_reads() - whole_before;
    if (meta == nullptr) continue;
    DropIncluded(m, meta->included[me_.value]);
    ReplayPending(m, replica);
    installed_[i].generation = meta->generation;
    installed_[i].log_end = meta->log_end;
    installed_[i].index_end = meta->index_end;
    installed_merged_[i].assign(meta->merged_clock.begin(), meta->merged_clock.end());
  }
  return sync::MinMergedClockOfOthers(installed_merged_, sync::NotWaitedFor(me_, counts_own_clocks_));
}

bool ReplicaRefresher::ReadsRecords(std::size_t m, const model::Replica& replica) const {
  // Own records are skipped only under master += delta, and the first
  // generation (every row, no writer) is always read.
  if (counts_own_clocks_ || installed_[m].generation == 0) return true;
  const model::TableSet& tables = replica.tables();
  for (std::size_t t = 0; t < tables.size(); ++t) {
    if (tables[t].rows() == 0 || (t < written_alone_.size() && written_alone_[t])) continue;
    if (!focused() || t != focus_table_.value) return true;  // a shared table
    // The focus: settled once its earlier writers' clocks before it are in.
    if (DefectPlanted(PlantedDefect::kFocusSettledAtOnce)) continue;
    if (focus_settled_[m] == 0 && !SettlesFocus(installed_merged_[m])) return true;
  }
  return false;
}

Result<const sync::SnapshotMeta*> ReplicaRefresher::ReadHeldRows(model::MemoryIndex m, model::Replica& replica) {
  struct Held {
    model::TableId table;
    std::int64_t slot;
    std::size_t staged;  // where its bytes land in rows_buffer_
  };
  std::vector<Held> held;
  std::vector<sync::SnapshotReader::RowRead> runs;  // destinations set once the buffer is sized
  std::size_t staged = 0, run_end = 0;
  const model::TableSet& tables = replica.tables();
  for (std::size_t t = 0; t < tables.size(); ++t) {
    const model::TableId table{static_cast<std::uint32_t>(t)};
    const bool focus = focused() && focus_table_ == table;
    if (!focus && will_focus_ == table) continue;  // read when a focus names its rows
    if (t < set_initially_.size() && set_initially_[t] != 0) continue;
    // A settled focus FocusRows loaded: no other rank writes it until this
    // rank leaves it, so it holds what this read would (and the refreshes
    // after read its records only if it were unsettled: ReadsRecords).
    if (focus && focus_settled_[m.value] != 0) continue;
    const model::RowPartition& partition = layout_.partition(table);
    const std::size_t row_bytes = layout_.tables()[t].row_bytes();
    for (std::int64_t slot = 0; slot < tables[t].rows(); ++slot) {
      const std::int64_t r = replica.RowOfSlot(table, slot);
      if (partition.Owner(model::RowId{r}) != m) continue;
      if (focus && (r < focus_first_ || r >= focus_last_)) continue;
      const std::size_t offset = layout_.RowOffset(table, model::RowId{r});
      // Rows ascend within a shard: a gap cheaper than a get joins the run.
      if (!runs.empty() && offset >= run_end && offset - run_end <= operation_cost_bytes_) {
        staged += offset + row_bytes - run_end;
        runs.back().bytes = offset + row_bytes - runs.back().offset;
      } else {
        runs.push_back({offset, nullptr, row_bytes});
        staged += row_bytes;
      }
      run_end = offset + row_bytes;
      held.push_back({table, slot, staged - row_bytes});
    }
  }
  if (runs.empty()) {  // nothing held here: the meta alone
    const sync::SnapshotMeta* meta = nullptr;
    sync::SnapshotReader* reader = readers_[m.value].get();
    const std::uint64_t since = 0;
    STALELEARN_RETURN_IF_ERROR(sync::SnapshotReader::ReadNewerMetas(std::span(&reader, 1), std::span(&since, 1),
                                                                    std::span(&meta, 1)));
    return meta;
  }
  rows_buffer_.resize(staged);
  std::size_t at = 0;
  for (sync::SnapshotReader::RowRead& run : runs) {
    run.destination = rows_buffer_.data() + at;
    at += run.bytes;
  }
  STALELEARN_RETURN_IF_ERROR(readers_[m.value]->ReadRows(runs).status());
  for (const Held& h : held) {
    InstallRow(h.table, h.slot,
               std::span(rows_buffer_.data() + h.staged, layout_.tables()[h.table.value].row_bytes()), replica);
  }
  if (rows_buffer_.size() > sync::SnapshotReader::kLogChunkBytes) std::vector<std::byte>().swap(rows_buffer_);
  return &readers_[m.value]->last_meta();
}

bool ReplicaRefresher::SettlesFocus(std::span<const std::uint64_t> merged_clock) const {
  const auto writer = static_cast<std::size_t>(focus_writer_.value);
  if (focus_writer_.value < 0 || writer >= merged_clock.size()) {
    return sync::MinMergedClockOfOthers(merged_clock, me_) >= focus_clock_;
  }
  return merged_clock[writer] >= focus_clock_;
}

Status ReplicaRefresher::ReadMergedModel(model::TableSet& model) {
  STALELEARN_RETURN_IF_ERROR(DropPrefetch());  // the readers serve one read at a time
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    const model::MemoryIndex m{static_cast<int>(i)};
    shard_buffer_.resize(layout_.ShardBytes(m));
    STALELEARN_ASSIGN_OR_RETURN(std::optional<sync::SnapshotMeta> meta, readers_[i]->ReadNewer(0, shard_buffer_));
    if (!meta) return FailedPrecondition("a memory rank has published no snapshot");
    layout_.InstallShard(m, shard_buffer_.data(), model);
  }
  return Status::Ok();
}

Status ReplicaRefresher::ReadMergedRows(model::TableSet& model, std::span<const model::RowRange> rows) {
  if (rows.empty()) return ReadMergedModel(model);
  STALELEARN_RETURN_IF_ERROR(DropPrefetch());  // the readers serve one read at a time
  // A range's rows on memory rank m are consecutive local indices, so one
  // run of its shard: read straight into `model` where they are consecutive
  // rows there too (range partitions), else staged and spread (hash).
  struct Staged {
    std::size_t table;
    model::MemoryIndex m;
    std::int64_t local_first, count;
    std::size_t run;  // in reads[m]
    std::size_t at;   // in rows_buffer_
  };
  std::vector<Staged> staged;
  std::vector<std::vector<sync::SnapshotReader::RowRead>> reads(readers_.size());
  std::size_t staged_bytes = 0;
  for (std::size_t t = 0; t < rows.size() && t < model.size(); ++t) {
    const model::TableId table{static_cast<std::uint32_t>(t)};
    const model::RowPartition& partition = layout_.partition(table);
    const std::size_t row_bytes = layout_.tables()[t].row_bytes();
    if (rows[t].size() <= 0 || row_bytes == 0) continue;
    for (std::size_t i = 0; i < readers_.size(); ++i) {
      const model::MemoryIndex m{static_cast<int>(i)};
      const std::int64_t local_first = partition.ShardRowsBelow(m, rows[t].first);
      const std::int64_t count = partition.ShardRowsBelow(m, rows[t].last) - local_first;
      if (count <= 0) continue;
      const model::RowId first = partition.GlobalRow(m, local_first);
      const std::size_t offset = layout_.RowOffset(table, first);
      const auto bytes = static_cast<std::size_t>(count) * row_bytes;
      if (partition.GlobalRow(m, local_first + count - 1).value == first.value + count - 1) {
        reads[i].push_back({offset, model[t].RowBytes(first.value), bytes});
      } else {
        staged.push_back({t, m, local_first, count, reads[i].size(), staged_bytes});
        reads[i].push_back({offset, nullptr, bytes});
        staged_bytes += bytes;
      }
    }
  }
  rows_buffer_.resize(staged_bytes);
  for (const Staged& s : staged) {
    reads[static_cast<std::size_t>(s.m.value)][s.run].destination = rows_buffer_.data() + s.at;
  }
  std::vector<sync::SnapshotReader*> readers;
  std::vector<std::span<const sync::SnapshotReader::RowRead>> runs;
  for (std::size_t i = 0; i < readers_.size(); ++i) {
    if (reads[i].empty()) continue;
    readers.push_back(readers_[i].get());
    runs.emplace_back(reads[i]);
  }
  if (!readers.empty()) STALELEARN_RETURN_IF_ERROR(sync::SnapshotReader::ReadRowsOfEach(readers, runs));
  for (const Staged& s : staged) {
    const model::RowPartition& partition = layout_.partition(model::TableId{static_cast<std::uint32_t>(s.table)});
    const std::size_t row_bytes = layout_.tables()[s.table].row_bytes();
    for (std::int64_t k = 0; k < s.count; ++k) {
      std::memcpy(model[s.table].RowBytes(partition.GlobalRow(s.m, s.local_first + k).value),
                  rows_buffer_.data() + s.at + static_cast<std::size_t>(k) * row_bytes, row_bytes);
    }
  }
  if (rows_buffer_.size() > sync::SnapshotReader::kLogChunkBytes) std::vector<std::byte>().swap(rows_buffer_);
  return Status::Ok();
}

}  // namespace stalelearn::runtime
