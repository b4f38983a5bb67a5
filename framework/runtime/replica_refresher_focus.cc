// ReplicaRefresher's stratified reads (replica_refresher.h): FocusRows,
// which loads a stripe's held rows when the focus moves, and PrefetchRows,
// which starts that load ahead, while the stripe rests and the kernel runs
// on the current one.
#include <algorithm>
#include <utility>

#include "framework/core/planted_defect.h"
#include "framework/runtime/replica_refresher.h"

namespace stalelearn::runtime {
namespace {

// The first slot of `table` whose row is not below `row` (slots ascend with
// rows, so a binary search).
std::int64_t FirstSlotNotBelow(const model::Replica& replica, model::TableId table, std::int64_t row) {
  std::int64_t low = 0;
  std::int64_t high = replica.tables()[table.value].rows();
  while (low < high) {
    const std::int64_t mid = low + (high - low) / 2;
    if (replica.RowOfSlot(table, mid) < row) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

// The replica slots [begin, end) holding rows [first, last) of `table`: two
// binary searches, not a pass over every held row.
std::pair<std::int64_t, std::int64_t> HeldSlots(const model::Replica& replica, model::TableId table,
                                                std::int64_t first, std::int64_t last) {
  return {FirstSlotNotBelow(replica, table, first), FirstSlotNotBelow(replica, table, last)};
}

}  // namespace

void ReplicaRefresher::PlanRangeRead(model::TableId table, std::int64_t first, std::int64_t last) {
  RangeRead& read = range_read_;
  read.table = table;
  read.first = first;
  read.last = last;
  const model::RowPartition& partition = layout_.partition(table);
  const std::size_t row_bytes = layout_.tables()[table.value].row_bytes();
  // The range's rows of each shard are contiguous there (range and hash
  // partitions keep rows in order): one read per memory rank, into one buffer.
  const auto shards = static_cast<std::size_t>(layout_.memory_ranks());
  read.begin.assign(shards, SIZE_MAX);
  read.end.assign(shards, 0);
  for (std::int64_t r = first; r < last; ++r) {
    const auto m = static_cast<std::size_t>(partition.Owner(model::RowId{r}).value);
    const std::size_t offset = layout_.RowOffset(table, model::RowId{r});
    read.begin[m] = std::min(read.begin[m], offset);
    read.end[m] = std::max(read.end[m], offset + row_bytes);
  }
  read.at.assign(shards, 0);
  std::size_t total = 0;
  for (std::size_t m = 0; m < shards; ++m) {
    read.at[m] = total;
    if (read.end[m] > read.begin[m]) total += read.end[m] - read.begin[m];
  }
  read.buffer.resize(total);
  // All memory ranks' reads at once (their round trips overlap).
  read.readers.clear();
  read.reads.clear();
  for (std::size_t m = 0; m < shards; ++m) {
    if (read.end[m] <= read.begin[m]) continue;
    read.readers.push_back(readers_[m].get());
    read.reads.push_back({read.begin[m], read.buffer.data() + read.at[m], read.end[m] - read.begin[m]});
  }
  read.each.clear();
  for (const sync::SnapshotReader::RowRead& r : read.reads) read.each.emplace_back(&r, 1);
}

Result<bool> ReplicaRefresher::BeginGather(model::TableId table, std::int64_t first, std::int64_t last,
                                           std::optional<sync::AwaitedClocks> awaits) {
  if (gather_ == nullptr || gather_replica_ == nullptr) return false;
  const model::Replica& replica = *gather_replica_;
  const model::RowPartition& partition = layout_.partition(table);
  const std::size_t row_bytes = layout_.tables()[table.value].row_bytes();
  const auto shards = static_cast<std::size_t>(layout_.memory_ranks());
  GatherRead& read = gather_read_;
  read.keys.resize(shards);
  read.slots.resize(shards);
  for (std::size_t m = 0; m < shards; ++m) {
    read.keys[m].clear();
    read.slots[m].clear();
  }
  // The held rows of the range, by memory rank (a shard's rows ascend with
  // the slots: keys in increasing order).
  const auto [begin, end] = HeldSlots(replica, table, first, last);
  for (std::int64_t slot = begin; slot < end; ++slot) {
    const std::int64_t r = replica.RowOfSlot(table, slot);
    const auto m = static_cast<std::size_t>(partition.Owner(model::RowId{r}).value);
    read.keys[m].push_back(sync::EntryKey(table, model::RowId{r}));
    read.slots[m].push_back(slot);
  }
  std::size_t rows = 0;
  for (std::size_t m = 0; m < shards; ++m) {
    rows += read.keys[m].size();
    const std::size_t asked = read.keys[m].size();
    if (!gather_->Fits(model::MemoryIndex{static_cast<int>(m)}, read.keys[m], asked * row_bytes)) return false;
  }
  // Worth it at one row in sync::kGatherAtMostOneIn of the range or fewer.
  if (sync::kGatherAtMostOneIn * rows > static_cast<std::size_t>(last - first)) return false;
  for (std::size_t m = 0; m < shards; ++m) {
    if (read.keys[m].empty()) continue;
    STALELEARN_RETURN_IF_ERROR(
        gather_->Request(model::MemoryIndex{static_cast<int>(m)}, read.keys[m], read.keys[m].size() * row_bytes,
                         awaits));
  }
  read.table = table;
  read.first = first;
  read.last = last;
  read.awaits = awaits.has_value();
  return true;
}

Status ReplicaRefresher::ReadGatherAhead() {
  if (!prefetching_ || !gathering_) return Status::Ok();
  for (std::size_t m = 0; m < gather_read_.keys.size(); ++m) {
    if (!gather_read_.keys[m].empty()) {
      STALELEARN_RETURN_IF_ERROR(gather_->ReadAhead(model::MemoryIndex{static_cast<int>(m)}));
    }
  }
  return Status::Ok();
}

Status ReplicaRefresher::FinishGather(model::Replica& replica) {
  const GatherRead& read = gather_read_;
  const std::size_t row_bytes = layout_.tables()[read.table.value].row_bytes();
  for (std::size_t m = 0; m < read.keys.size(); ++m) {
    if (read.keys[m].empty()) continue;
    STALELEARN_ASSIGN_OR_RETURN(const std::span<const std::byte> rows,
                                gather_->Await(model::MemoryIndex{static_cast<int>(m)}));
    for (std::size_t i = 0; i < read.slots[m].size(); ++i) {
      InstallRow(read.table, read.slots[m][i], rows.subspan(i * row_bytes, row_bytes), replica);
    }
  }
  return Status::Ok();
}

Status ReplicaRefresher::PrefetchRows(model::TableId table, std::int64_t first, std::int64_t last) {
  STALELEARN_ASSIGN_OR_RETURN(const bool gathered, PrefetchGathered(table, first, last, std::nullopt));
  if (gathered) return Status::Ok();
  PlanRangeRead(table, first, last);
  STALELEARN_RETURN_IF_ERROR(sync::SnapshotReader::BeginRowsOfEach(range_read_.readers, range_read_.each));
  prefetching_ = true;
  return Status::Ok();
}

Result<bool> ReplicaRefresher::PrefetchGathered(model::TableId table, std::int64_t first, std::int64_t last,
                                                std::optional<sync::AwaitedClocks> awaits) {
  STALELEARN_RETURN_IF_ERROR(DropPrefetch());
  STALELEARN_ASSIGN_OR_RETURN(gathering_, BeginGather(table, first, last, awaits));
  prefetching_ = gathering_;
  return gathering_;
}

Status ReplicaRefresher::DropPrefetch() {
  if (!prefetching_) return Status::Ok();
  prefetching_ = false;  // finished (its gets waited for), its rows unused
  ++counters_.reads_ahead_dropped;
  if (gathering_) return Status::Ok();  // the next request to a memory rank replaces its reply
  return sync::SnapshotReader::FinishRowsOfEach(range_read_.readers, range_read_.each);
}

Status ReplicaRefresher::FocusRows(model::TableId table, std::int64_t first, std::int64_t last, std::uint64_t clock,
                                   model::ComputeIndex writer_before, model::Replica& replica) {
  if (PendingNames(table, first, last)) return FailedPrecondition("FocusRows with own deltas of the range not yet merged");
  NumberSlots(replica);
  const bool prefetched = prefetching_ && (gathering_ ? ReadsRange(gather_read_, table, first, last)
                                                      : ReadsRange(range_read_, table, first, last));
  if (prefetched) {
    ++counters_.loads_read_ahead;
  } else {
    STALELEARN_RETURN_IF_ERROR(PrefetchRows(table, first, last));  // begun now: the same read, finished at once
  }
  prefetching_ = false;
  focus_clock_ = clock;
  focus_writer_ = writer_before;
  if (gathering_) {
    // The memory ranks answered after the range's writer was done with it
    // (EnableGather): every shard is settled.
    STALELEARN_RETURN_IF_ERROR(FinishGather(replica));
    ++counters_.loads_gathered;
    focus_settled_.assign(static_cast<std::size_t>(layout_.memory_ranks()), 1);
    focus_table_ = table;
    focus_first_ = first;
    focus_last_ = last;
    return Status::Ok();
  }
  // A range settled by the generation the read began at changes in none
  // after it: nobody writes a stripe between its writer's last clock and
  // this rank's first (the plan's strata; own deltas of it are merged:
  // PendingNames above).
  bool unsettled = false;
  STALELEARN_RETURN_IF_ERROR(sync::SnapshotReader::FinishRowsOfEach(
      range_read_.readers, range_read_.each, [&](const sync::SnapshotMeta& first) {
        const bool settled = SettlesFocus(first.merged_clock);
        unsettled = unsettled || !settled;
        return DefectPlanted(PlantedDefect::kFocusSettledAtOnce) || settled;
      }));
  if (prefetched && unsettled) ++counters_.loads_read_ahead_unsettled;
  // A shard without rows of the range has none to settle; one whose read
  // generation holds `writer_before`'s clocks before `clock` is settled
  // from the start (SettlesFocus, ReadsRecords).
  const auto shards = static_cast<std::size_t>(layout_.memory_ranks());
  const RangeRead& read = range_read_;
  focus_settled_.assign(shards, 1);
  for (std::size_t m = 0; m < shards; ++m) {
    if (read.end[m] <= read.begin[m]) continue;
    focus_settled_[m] = SettlesFocus(readers_[m]->last_meta().merged_clock) ? 1 : 0;
  }
  // Install the held ones (their slots ascend with their rows).
  const model::RowPartition& partition = layout_.partition(table);
  const std::size_t row_bytes = layout_.tables()[table.value].row_bytes();
  const auto [begin, end] = HeldSlots(replica, table, first, last);
  for (std::int64_t slot = begin; slot < end; ++slot) {
    const std::int64_t r = replica.RowOfSlot(table, slot);
    const auto m = static_cast<std::size_t>(partition.Owner(model::RowId{r}).value);
    const std::size_t offset = layout_.RowOffset(table, model::RowId{r});
    if (DefectPlanted(PlantedDefect::kFocusLoadsNothing)) continue;
    InstallRow(table, slot, std::span(read.buffer.data() + read.at[m] + (offset - read.begin[m]), row_bytes), replica);
  }
  focus_table_ = table;
  focus_first_ = first;
  focus_last_ = last;
  return Status::Ok();
}

}  // namespace stalelearn::runtime
