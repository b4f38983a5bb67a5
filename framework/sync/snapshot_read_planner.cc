// SnapshotReadPlanner: a refresh that reads the change index and then only
// the rows its replica holds, each once (snapshot_read_planner.h).
//
// Why it is safe without a second oldest-valid word: the index has room for
// as many records as the log can hold (ring_layout.h), so while the log
// still holds every record from `since` on (its oldest-valid word, read
// after the index entries and after each batch of rows), none of their
// index entries has been overwritten either. A check that fails means the
// reader fell too far behind: it reads the whole shard instead, which
// replaces whatever it had installed.
#include "framework/sync/snapshot_read_planner.h"

#include <algorithm>
#include <cstring>

#include "framework/core/planted_defect.h"

namespace stalelearn::sync {
namespace {

// Index entries read per get (1 MiB).
constexpr std::uint64_t kIndexChunkEntries = std::uint64_t{1} << 16;

// How many index entries ahead of the one picked the picker's prefetch is
// told about (and DropSuperseded asks for an id's latest record).
constexpr std::uint64_t kPickAhead = 16;

// PickScratch::latest_of_id: no record yet, and the flag that all of an
// id's records so far named the own writer (picked indices stay below it).
constexpr std::uint32_t kNoRecord = ~std::uint32_t{0};
constexpr std::uint32_t kLatestFlag = std::uint32_t{1} << 31;

constexpr std::size_t kLogChunkBytes = SnapshotProtocol::kLogChunkBytes;

}  // namespace

SnapshotReadPlanner::SnapshotReadPlanner(SnapshotProtocol& protocol, std::size_t operation_cost_bytes)
    : protocol_(protocol), operation_cost_bytes_(operation_cost_bytes) {}

Status SnapshotReadPlanner::ReadWriters(std::uint64_t begin, std::uint64_t end) {
  scratch_->writers.resize(static_cast<std::size_t>(end - begin));
  const SnapshotProtocol::RingGet get{SnapshotProtocol::Ring::kWriters, begin,
                                      static_cast<std::size_t>(end - begin) * PublishedGeometry::kWriterBytes,
                                      reinterpret_cast<std::byte*>(scratch_->writers.data())};
  return protocol_.Get(std::span(&get, 1));
}

Status SnapshotReadPlanner::PickFromIndex(std::uint64_t begin, std::uint64_t end, std::uint64_t log_begin,
                                          const RecordPicker& picker) {
  constexpr std::size_t kEntry = PublishedGeometry::kIndexEntryBytes;
  std::uint64_t position = log_begin;  // of record `begin`: records are contiguous
  for (std::uint64_t at = begin; at < end;) {
    const std::uint64_t n = std::min(kIndexChunkEntries, end - at);
    if (reading_writers_) STALELEARN_RETURN_IF_ERROR(ReadWriters(at, at + n));
    scratch_->index.resize(static_cast<std::size_t>(n) * kEntry);
    const SnapshotProtocol::RingGet get{SnapshotProtocol::Ring::kIndex, at, static_cast<std::size_t>(n) * kEntry,
                                        scratch_->index.data()};
    STALELEARN_RETURN_IF_ERROR(protocol_.Get(std::span(&get, 1)));
    const bool prefetch = static_cast<bool>(picker.prefetch);
    for (std::uint64_t i = 0; i < n; ++i) {
      if (prefetch && i + kPickAhead < n) {
        std::uint64_t ahead;
        std::memcpy(&ahead, scratch_->index.data() + (i + kPickAhead) * kEntry, sizeof ahead);
        picker.prefetch(RecordShardOffset(ahead), RecordRowBytes(ahead));
      }
      std::uint64_t key;
      std::memcpy(&key, scratch_->index.data() + i * kEntry, sizeof key);
      const std::size_t offset = RecordShardOffset(key);
      const std::size_t bytes = RecordRowBytes(key);
      const std::uint64_t record = position;
      position += sizeof key + bytes;
      const std::int64_t id = picker.pick(offset, bytes);
      if (id == kNotPicked) continue;
      scratch_->picked.push_back(PickScratch::Picked{record, offset, bytes, id});
      if (reading_writers_) scratch_->picked.back().writer = scratch_->writers[i];
    }
    at += n;
  }
  DropSuperseded(picker.id_count);
  return Status::Ok();
}

void SnapshotReadPlanner::DropSuperseded(std::size_t id_count) {
  std::vector<PickScratch::Picked>& picked = scratch_->picked;
  if (id_count > 0 && picked.size() < kLatestFlag - 1) {
    MarkSupersededByIdArray(id_count);
  } else {
    MarkSupersededBySorting();
  }
  std::erase_if(picked, [](const PickScratch::Picked& p) { return p.bytes == 0; });
}

void SnapshotReadPlanner::MarkSupersededByIdArray(std::size_t id_count) {
  // One pass in log order keeps each id's latest record (an earlier one is
  // marked as the next arrives); a second marks a latest record whose id's
  // records all named the own writer, and resets the array for the next
  // read. O(picked), no sort.
  std::vector<PickScratch::Picked>& picked = scratch_->picked;
  const bool own = own_writer_ != kNoWriter;
  std::vector<std::uint32_t>& latest = scratch_->latest_of_id;
  if (latest.size() < id_count) latest.resize(id_count, kNoRecord);
  for (std::size_t i = 0; i < picked.size(); ++i) {
    if (i + kPickAhead < picked.size() && picked[i + kPickAhead].id >= 0) {
      __builtin_prefetch(latest.data() + picked[i + kPickAhead].id);
    }
    PickScratch::Picked& p = picked[i];
    if (p.id < 0) continue;
    std::uint32_t& slot = latest[static_cast<std::size_t>(p.id)];
    bool all_own = own && p.writer == own_writer_;
    if (slot != kNoRecord) {
      picked[slot & ~kLatestFlag].bytes = 0;
      all_own = all_own && (slot & kLatestFlag) != 0;
    }
    slot = static_cast<std::uint32_t>(i) | (all_own ? kLatestFlag : 0);
  }
  for (PickScratch::Picked& p : picked) {
    if (p.id < 0 || p.bytes == 0) continue;  // each id's latest record, once
    std::uint32_t& slot = latest[static_cast<std::size_t>(p.id)];
    if ((slot & kLatestFlag) != 0) p.bytes = 0;
    slot = kNoRecord;
  }
}

void SnapshotReadPlanner::MarkSupersededBySorting() {
  // Sorting the picked records by id keeps memory to what was picked (an
  // array over every id, per memory rank read, was 1.6 GB at --ranks 64:8).
  std::vector<PickScratch::Picked>& picked = scratch_->picked;
  std::vector<std::uint32_t>& by_id = scratch_->by_id;
  by_id.clear();
  for (std::size_t i = 0; i < picked.size(); ++i) {
    if (picked[i].id >= 0) by_id.push_back(static_cast<std::uint32_t>(i));
  }
  std::ranges::stable_sort(by_id, {}, [&](std::uint32_t i) { return picked[i].id; });  // log order within an id
  for (std::size_t k = 0; k < by_id.size();) {
    std::size_t last = k;  // the records of one id are by_id[k..last]
    bool all_own = own_writer_ != kNoWriter;
    for (;; ++last) {
      all_own = all_own && picked[by_id[last]].writer == own_writer_;
      if (last + 1 == by_id.size() || picked[by_id[last + 1]].id != picked[by_id[k]].id) break;
    }
    // A later record follows: only the latest is read. None is when this
    // reader alone changed the row since the generation it holds.
    for (std::size_t j = k; j < last; ++j) picked[by_id[j]].bytes = 0;
    if (all_own) picked[by_id[last]].bytes = 0;
    k = last + 1;
  }
}

std::uint64_t SnapshotReadPlanner::AllRecordsCost(std::uint64_t from, std::uint64_t to) const {
  // One get per chunk (two where it wraps, ignored), each followed by a read
  // of the oldest-valid word.
  const std::uint64_t chunks = (to - from + kLogChunkBytes - 1) / kLogChunkBytes;
  return to - from + 2 * chunks * operation_cost_bytes_;
}

Result<std::size_t> SnapshotReadPlanner::FetchPicked(std::size_t first, std::uint64_t* bytes_read,
                                                     std::uint64_t* cost) {
  // Spans of the log to get: a record's row bytes, widened over a following
  // record when the gap between them is small.
  struct Span {
    std::uint64_t begin, end;
    std::size_t staged;
  };
  std::vector<Span> spans;
  std::size_t staged = 0;
  std::size_t last = first;
  for (; last < scratch_->picked.size(); ++last) {
    PickScratch::Picked& p = scratch_->picked[last];
    const std::uint64_t begin = p.position + sizeof(std::uint64_t);
    const std::uint64_t end = begin + p.bytes;
    const bool extend =
        !spans.empty() && JoinsRun(spans.back().end, begin);
    const std::size_t adds = extend ? static_cast<std::size_t>(end - spans.back().end) : p.bytes;
    // About kLogChunkBytes at a time, coalesced or not: a whole-shard
    // publish is one run of adjacent records.
    if (last > first && staged + adds > kLogChunkBytes) break;
    if (extend) {
      spans.back().end = end;
    } else {
      spans.push_back(Span{begin, end, staged});
    }
    staged += adds;
    p.staged = spans.back().staged + static_cast<std::size_t>(begin - spans.back().begin);
  }
  if (scratch_->rows.size() < staged) scratch_->rows.resize(staged);
  gets_.clear();
  for (const Span& span : spans) {
    gets_.push_back(SnapshotProtocol::RingGet{SnapshotProtocol::Ring::kLog, span.begin,
                                              static_cast<std::size_t>(span.end - span.begin),
                                              scratch_->rows.data() + span.staged});
  }
  STALELEARN_RETURN_IF_ERROR(protocol_.Get(gets_));
  *bytes_read += staged;
  *cost += staged + spans.size() * operation_cost_bytes_;
  return last;
}

Result<const SnapshotMeta*> SnapshotReadPlanner::ReadPickedChanges(const SnapshotMeta& since,
                                                                   const RecordPicker& picker, const RangeSink& sink,
                                                                   PickScratch* scratch) {
  scratch_ = scratch != nullptr ? scratch : &own_scratch_;
  if (!pick_from_index_) return ReadAllChangesWeighingPicks(since, picker, sink);
  const SnapshotMeta* result = nullptr;
  bool too_far_behind = false;
  using Latest = SnapshotProtocol::Latest;
  STALELEARN_RETURN_IF_ERROR(protocol_.Retry(
      [&]() -> Result<bool> {
        STALELEARN_ASSIGN_OR_RETURN(const Latest latest, protocol_.ReadLatestMeta(since.generation));
        if (latest != Latest::kRead) return latest == Latest::kNothingNewer;  // else read the newest again
        const SnapshotMeta& meta = protocol_.latest_meta();
        if (meta.index_end < since.index_end ||
            meta.index_end - since.index_end > protocol_.geometry().index_entries()) {
          too_far_behind = true;
          return true;
        }
        scratch_->picked.clear();
        // The writers only where some record since `since` names one.
        reading_writers_ = WritersWorthReading(since, meta);
        STALELEARN_RETURN_IF_ERROR(PickFromIndex(since.index_end, meta.index_end, since.log_end, picker));
        std::uint64_t bytes_read =
            (meta.index_end - since.index_end) *
            (PublishedGeometry::kIndexEntryBytes + (reading_writers_ ? PublishedGeometry::kWriterBytes : 0));
        // The index's bytes and gets (one per chunk), and the word read after it.
        const std::uint64_t index_chunks =
            (meta.index_end - since.index_end + kIndexChunkEntries - 1) / kIndexChunkEntries;
        std::uint64_t cost = bytes_read + (index_chunks * (reading_writers_ ? 2 : 1) + 1) * operation_cost_bytes_;
        // Also vouches for the index entries (file comment) and the
        // positions they gave (a generation too large to log moved the
        // oldest-valid word past everything before it).
        STALELEARN_ASSIGN_OR_RETURN(bool logged, protocol_.LogHolds(since.log_end));
        for (std::size_t next = 0; logged && next < scratch_->picked.size();) {
          STALELEARN_ASSIGN_OR_RETURN(const std::size_t end, FetchPicked(next, &bytes_read, &cost));
          STALELEARN_ASSIGN_OR_RETURN(logged, protocol_.LogHolds(since.log_end));
          cost += operation_cost_bytes_;
          if (!logged) break;
          for (; next < end; ++next) {
            if (DefectPlanted(PlantedDefect::kPickedRefreshSkipsLastRecord) &&
                next + 1 == scratch_->picked.size()) {
              continue;
            }
            const PickScratch::Picked& p = scratch_->picked[next];
            const std::span<const std::byte> bytes(scratch_->rows.data() + p.staged, p.bytes);
            if (picker.take && p.id >= 0) {
              picker.take(p.id, p.shard_offset, bytes);
            } else {
              sink(p.shard_offset, bytes);
            }
          }
        }
        if (!logged) {
          too_far_behind = true;
          return true;
        }
        STALELEARN_RETURN_IF_ERROR(protocol_.AdvanceSimulatedTime(bytes_read));
        if (scratch_->rows.capacity() > 2 * kLogChunkBytes) std::vector<std::byte>().swap(scratch_->rows);
        if (since.generation != 0) WeighPicking(cost, AllRecordsCost(since.log_end, meta.log_end));
        result = &meta;
        return true;
      },
      "the picked changes"));
  if (!too_far_behind) return result;
  return protocol_.ReadWholeInstead(since, sink);
}

Result<bool> SnapshotReadPlanner::PatchPicked(std::uint64_t index_begin, std::uint64_t index_end,
                                              std::uint64_t log_begin, const RecordPicker& picker,
                                              const RangeSink& sink, std::uint64_t* bytes_read) {
  if (index_end < index_begin || index_end - index_begin > protocol_.geometry().index_entries()) return false;
  scratch_ = &own_scratch_;
  scratch_->picked.clear();
  reading_writers_ = false;
  STALELEARN_RETURN_IF_ERROR(PickFromIndex(index_begin, index_end, log_begin, picker));
  *bytes_read += (index_end - index_begin) * PublishedGeometry::kIndexEntryBytes;
  // Vouches for the entries, as in ReadPickedChanges, and then for each
  // batch of rows before it is passed on.
  STALELEARN_ASSIGN_OR_RETURN(bool logged, protocol_.LogHolds(log_begin));
  std::uint64_t cost = 0;
  for (std::size_t next = 0; logged && next < scratch_->picked.size();) {
    STALELEARN_ASSIGN_OR_RETURN(const std::size_t end, FetchPicked(next, bytes_read, &cost));
    STALELEARN_ASSIGN_OR_RETURN(logged, protocol_.LogHolds(log_begin));
    for (; logged && next < end; ++next) {
      const PickScratch::Picked& p = scratch_->picked[next];
      sink(p.shard_offset, std::span<const std::byte>(scratch_->rows.data() + p.staged, p.bytes));
    }
  }
  if (scratch_->rows.capacity() > 2 * kLogChunkBytes) std::vector<std::byte>().swap(scratch_->rows);
  return logged;
}

Result<const SnapshotMeta*> SnapshotReadPlanner::ReadAllChangesWeighingPicks(const SnapshotMeta& since,
                                                                             const RecordPicker& picker,
                                                                             const RangeSink& sink) {
  std::uint64_t records = 0;
  std::uint64_t position = since.log_end;  // of the next record: they are contiguous
  scratch_->picked.clear();
  const std::uint64_t whole_before = protocol_.whole_reads();
  STALELEARN_ASSIGN_OR_RETURN(
      const SnapshotMeta* meta, protocol_.ReadChanges(since, [&](std::size_t offset, std::span<const std::byte> bytes) {
        ++records;
        const std::int64_t id = picker.pick(offset, bytes.size());
        if (id != kNotPicked) {
          scratch_->picked.push_back(PickScratch::Picked{position, offset, bytes.size(), id});
          scratch_->picked.back().staged = static_cast<std::size_t>(records - 1);  // its record number, for the writers
        }
        position += sizeof(std::uint64_t) + bytes.size();
        sink(offset, bytes);
      }));
  if (meta != nullptr && protocol_.whole_reads() == whole_before && since.generation != 0) {
    // Who changed each record: what a picked read would skip (its writers
    // are counted below; one more get).
    reading_writers_ = WritersWorthReading(since, *meta);
    if (reading_writers_ && meta->index_end - since.index_end <= protocol_.geometry().index_entries()) {
      STALELEARN_RETURN_IF_ERROR(ReadWriters(since.index_end, meta->index_end));
      for (PickScratch::Picked& p : scratch_->picked) p.writer = scratch_->writers[p.staged];
    }
    DropSuperseded(picker.id_count);
    // What FetchPicked would have got: runs of picked records, a run going
    // on over a gap no larger than a get's cost.
    std::uint64_t fetched = 0, gets = 0, run_end = 0;
    for (const PickScratch::Picked& p : scratch_->picked) {
      const std::uint64_t begin = p.position + sizeof(std::uint64_t);
      const bool extend = gets > 0 && JoinsRun(run_end, begin);
      fetched += extend ? begin + p.bytes - run_end : p.bytes;
      gets += extend ? 0 : 1;
      run_end = begin + p.bytes;
    }
    const std::uint64_t batches = fetched / kLogChunkBytes + 1;  // each followed by a word read
    const std::uint64_t index_gets = (records / kIndexChunkEntries + 1) * (reading_writers_ ? 2 : 1);
    const std::uint64_t per_record =
        PublishedGeometry::kIndexEntryBytes + (reading_writers_ ? PublishedGeometry::kWriterBytes : 0);
    WeighPicking(records * per_record + fetched + (gets + batches + index_gets + 1) * operation_cost_bytes_,
                 AllRecordsCost(since.log_end, meta->log_end));
  }
  return meta;
}

void SnapshotReadPlanner::WeighPicking(std::uint64_t picked_cost, std::uint64_t all_cost) {
  // Decayed sums, and a margin before giving picking up: one unusual read
  // does not flip the choice; a reader that holds every row it is sent
  // (about 9% more through the index: 8 key bytes per ~92-byte record) does.
  // The first read (from generation 0: a whole-shard publish, in which the
  // index is pure overhead) is not weighed: it says nothing about refreshes.
  constexpr double kKeep = 0.75;
  constexpr double kMargin = 1.05;
  picked_cost_ = kKeep * picked_cost_ + static_cast<double>(picked_cost);
  all_cost_ = kKeep * all_cost_ + static_cast<double>(all_cost);
  pick_from_index_ = picked_cost_ <= (pick_from_index_ ? kMargin : 1.0) * all_cost_;
}

}  // namespace stalelearn::sync
