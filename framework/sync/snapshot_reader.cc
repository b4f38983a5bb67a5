#include "framework/sync/snapshot_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "framework/sync/wait_until.h"

namespace stalelearn::sync {

SnapshotReader::SnapshotReader(transport::Transport& transport, const transport::RemoteRegion& published,
                               PublishedGeometry geometry, WaitOptions wait)
    : transport_(transport),
      published_(published),
      geometry_(geometry),
      wait_(wait),
      planner_(*this, transport.capabilities().operation_cost_bytes) {
  meta_bytes_.resize(geometry_.meta_bytes());
  const auto n = static_cast<std::size_t>(geometry_.compute_ranks);
  for (SnapshotMeta* m : {&meta_, &first_meta_}) {
    m->merged_clock.resize(n);
    m->included.resize(n);
  }
}

Result<std::uint64_t> SnapshotReader::ReadWord(std::size_t offset) {
  std::uint64_t word = 0;
  STALELEARN_RETURN_IF_ERROR(transport::GetBlocking(transport_, &word, sizeof word, published_, offset, wait_.timeout));
  return word;
}

Result<bool> SnapshotReader::ReadMeta(std::uint64_t g, SnapshotMeta& meta, std::uint64_t* log_begin,
                                      std::uint64_t* live) {
  const int k = geometry_.MetaSlotOf(g);
  STALELEARN_RETURN_IF_ERROR(transport::GetBlocking(transport_, meta_bytes_.data(), meta_bytes_.size(), published_,
                                                    geometry_.meta_offset(k), wait_.timeout));
  std::atomic_thread_fence(std::memory_order_acquire);  // seqlock reader: meta before the re-check
  // The re-check, and the live word with it (one round trip).
  std::uint64_t after = 0;
  word_requests_.clear();
  STALELEARN_RETURN_IF_ERROR(IssueWord(&after, geometry_.version_offset(k), word_requests_));
  if (live != nullptr) STALELEARN_RETURN_IF_ERROR(IssueWord(live, geometry_.live_generation_offset(), word_requests_));
  for (transport::RequestPtr& r : word_requests_) STALELEARN_RETURN_IF_ERROR(r->Wait(wait_.timeout));
  word_requests_.clear();
  std::atomic_thread_fence(std::memory_order_acquire);  // the words before what is read after them
  return TakeMeta(g, after, meta, log_begin);
}

void SnapshotReader::TakeLiveGeneration(std::uint64_t live, std::uint64_t* begin0) {
  live_holds_first_ = live >= first_meta_.generation;
  if (live_holds_first_) *begin0 = first_meta_.log_end;
}

bool SnapshotReader::TakeMeta(std::uint64_t g, std::uint64_t after, SnapshotMeta& meta, std::uint64_t* log_begin) {
  std::uint64_t words[7];
  std::memcpy(words, meta_bytes_.data(), sizeof words);
  if (words[0] != 2 * g || after != 2 * g) return false;
  published_at_ps_ = words[1];
  if (&meta == &first_meta_) first_published_at_ps_ = words[1];
  *log_begin = words[2];
  meta.generation = g;
  meta.log_end = words[3];
  meta.index_end = words[4];
  meta.single_writer_end = words[5];
  meta.index_begin = words[6];
  const std::size_t n = meta.merged_clock.size();
  const std::size_t clocks = PublishedGeometry::kMetaHeaderBytes;
  std::memcpy(meta.merged_clock.data(), meta_bytes_.data() + clocks, 8 * n);
  std::memcpy(meta.included.data(), meta_bytes_.data() + clocks + 8 * n, 8 * n);
  return true;
}

Result<bool> SnapshotReader::ReadLog(std::uint64_t begin, std::uint64_t end, std::size_t keep, bool check_first) {
  const std::size_t capacity = geometry_.log_capacity();
  if (end < begin || end - begin > capacity) return false;
  std::uint64_t oldest = 0;
  if (check_first) {  // a read that cannot succeed is not made
    STALELEARN_ASSIGN_OR_RETURN(oldest, ReadWord(geometry_.log_oldest_offset()));
    if (oldest > begin) return false;
  }
  const std::size_t bytes = static_cast<std::size_t>(end - begin);
  if (log_copy_.size() < keep + bytes) {
    // A chunk and a cut record fit without the vector doubling past them.
    log_copy_.reserve(std::max(keep + bytes, kLogChunkBytes + kMaxRecordBytes));
    log_copy_.resize(keep + bytes);
  }
  requests_.clear();
  STALELEARN_RETURN_IF_ERROR(GetFromRing(log_copy_.data() + keep, bytes, geometry_.log_offset(), capacity,
                                         static_cast<std::size_t>(begin % capacity)));
  STALELEARN_RETURN_IF_ERROR(WaitForGets());
  std::atomic_thread_fence(std::memory_order_acquire);  // the records before the re-check
  STALELEARN_ASSIGN_OR_RETURN(oldest, ReadWord(geometry_.log_oldest_offset()));
  log_copy_bytes_ = keep + bytes;
  return oldest <= begin;
}

Status SnapshotReader::GetFromRing(std::byte* into, std::size_t bytes, std::size_t ring_offset, std::size_t ring_bytes,
                                   std::size_t at) {
  const std::size_t head = std::min(bytes, ring_bytes - at);
  if (head > 0) {
    STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr r, transport_.Get(into, head, published_, ring_offset + at));
    requests_.push_back(std::move(r));
  }
  if (head < bytes) {
    STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr r,
                                transport_.Get(into + head, bytes - head, published_, ring_offset));
    requests_.push_back(std::move(r));
  }
  return Status::Ok();
}

Status SnapshotReader::Get(std::span<const RingGet> gets) {
  const std::size_t capacity = geometry_.log_capacity();
  const std::size_t entries = geometry_.index_entries();
  requests_.clear();
  for (const RingGet& get : gets) {
    if (get.ring == Ring::kLog) {
      STALELEARN_RETURN_IF_ERROR(GetFromRing(get.into, get.bytes, geometry_.log_offset(), capacity,
                                             static_cast<std::size_t>(get.first % capacity)));
      continue;
    }
    const bool index = get.ring == Ring::kIndex;  // else the writers, one entry per record as well
    const std::size_t entry = index ? PublishedGeometry::kIndexEntryBytes : PublishedGeometry::kWriterBytes;
    const std::size_t offset = index ? geometry_.index_offset() : geometry_.writers_offset();
    STALELEARN_RETURN_IF_ERROR(GetFromRing(get.into, get.bytes, offset, entries * entry,
                                           static_cast<std::size_t>(get.first % entries) * entry));
  }
  return WaitForGets();
}

Status SnapshotReader::WaitForGets() {
  for (transport::RequestPtr& r : requests_) STALELEARN_RETURN_IF_ERROR(r->Wait(wait_.timeout));
  requests_.clear();
  return Status::Ok();
}

template <class Fn>
std::size_t SnapshotReader::ForEachRecord(Fn&& fn) const {
  std::size_t at = 0;
  while (at + sizeof(std::uint64_t) <= log_copy_bytes_) {
    std::uint64_t key;
    std::memcpy(&key, log_copy_.data() + at, sizeof key);
    const std::size_t bytes = RecordRowBytes(key);
    if (at + sizeof key + bytes > log_copy_bytes_) break;  // continues in the next chunk
    fn(RecordShardOffset(key), std::span<const std::byte>(log_copy_.data() + at + sizeof key, bytes));
    at += sizeof key + bytes;
  }
  return at;
}

Status SnapshotReader::AdvanceSimulatedTime(std::uint64_t bytes) {
  const auto published_at = transport::VirtualTimeFromPs(static_cast<std::int64_t>(published_at_ps_));
  return wait_.time->AdvanceTo(wait_.time->GetVisibleAt(published_at, bytes));
}

Status SnapshotReader::AdvanceAfterRead(std::uint64_t body_bytes, std::uint64_t patched) {
  const auto body_from = transport::VirtualTimeFromPs(static_cast<std::int64_t>(first_published_at_ps_));
  const auto patch_from = transport::VirtualTimeFromPs(static_cast<std::int64_t>(published_at_ps_));
  return wait_.time->AdvanceTo(std::max(wait_.time->GetVisibleAt(body_from, body_bytes),
                                        wait_.time->GetVisibleAt(patch_from, patched)));
}

template <class Body, class Patch>
Result<bool> SnapshotReader::ReadWhole(std::uint64_t after, std::uint64_t bytes, Body&& body, Patch&& patch) {
  bool read = false;
  STALELEARN_RETURN_IF_ERROR(
      WaitUntil(
          wait_, transport_,
          [&]() -> Result<bool> {
            STALELEARN_ASSIGN_OR_RETURN(std::uint64_t g0, ReadWord(geometry_.latest_generation_offset()));
            if (g0 <= after) return true;  // nothing newer: read stays false
            std::uint64_t begin0 = 0, begin1 = 0;
            std::uint64_t live = 0;
            STALELEARN_ASSIGN_OR_RETURN(bool meta0, ReadMeta(g0, first_meta_, &begin0, &live));
            if (!meta0) return false;  // its slot is being rewritten by a newer generation
            TakeLiveGeneration(live, &begin0);
            STALELEARN_RETURN_IF_ERROR(body());
            std::atomic_thread_fence(std::memory_order_acquire);  // live rows before the second meta
            STALELEARN_ASSIGN_OR_RETURN(std::uint64_t g1, ReadWord(geometry_.latest_generation_offset()));
            STALELEARN_ASSIGN_OR_RETURN(bool meta1, ReadMeta(g1, meta_, &begin1));
            if (!meta1) return false;
            // Every live row rewritten while we read belongs to g0..g1: lay
            // their records over it (from g0's first, unless the live word
            // said its rows were written: TakeLiveGeneration).
            std::uint64_t patched = 0;
            STALELEARN_ASSIGN_OR_RETURN(bool logged, patch(begin0, &patched));
            if (!logged) return false;  // overwritten meanwhile: read the newest again
            STALELEARN_RETURN_IF_ERROR(AdvanceAfterRead(bytes, patched));
            read = true;
            return true;
          },
          [&] { return fmt::format("a consistent snapshot from rank {}", published_.owner().value); })
          .status());
  return read;
}

Result<std::optional<SnapshotMeta>> SnapshotReader::ReadNewer(std::uint64_t after, std::span<std::byte> shard_bytes) {
  const auto body = [&]() -> Status {
    if (shard_bytes.empty()) return Status::Ok();
    return transport::GetBlocking(transport_, shard_bytes.data(), shard_bytes.size(), published_,
                                  geometry_.data_offset(), wait_.timeout);
  };
  const auto copy = [&](std::size_t offset, std::span<const std::byte> bytes) {
    if (offset + bytes.size() <= shard_bytes.size()) std::memcpy(shard_bytes.data() + offset, bytes.data(), bytes.size());
  };
  // Streamed in chunks (StreamLog): a patch of many records once took a
  // buffer of its own size, a huge-page block allocated and freed at every
  // stratified stripe load, whose freed pages small allocations then
  // filled as huge pages (1.8 GB of RSS at 64:8).
  const auto patch = [&](std::uint64_t begin0, std::uint64_t* patched) -> Result<bool> {
    *patched = meta_.log_end - begin0;
    return StreamLog(begin0, meta_.log_end, copy);
  };
  STALELEARN_ASSIGN_OR_RETURN(bool read, ReadWhole(after, shard_bytes.size(), body, patch));
  if (!read) return std::optional<SnapshotMeta>();
  return std::optional<SnapshotMeta>(meta_);
}

template <class Fn>
Result<bool> SnapshotReader::StreamLog(std::uint64_t begin, std::uint64_t end, Fn&& fn) {
  std::uint64_t at = begin;
  std::size_t carried = 0;
  while (at < end) {
    const std::uint64_t next = std::min<std::uint64_t>(end, at + kLogChunkBytes);
    // A chunk after the first: the check after the one before stands for
    // the check before it (the log's oldest position only grows).
    STALELEARN_ASSIGN_OR_RETURN(bool logged, ReadLog(at, next, carried, /*check_first=*/at == begin));
    if (!logged) return false;
    const std::size_t used = ForEachRecord(fn);
    carried = log_copy_bytes_ - used;
    std::memmove(log_copy_.data(), log_copy_.data() + used, carried);
    at = next;
  }
  return true;
}

Status SnapshotReader::Retry(const std::function<Result<bool>()>& step, std::string_view what) {
  return WaitUntil(wait_, transport_, step,
                   [&] { return fmt::format("{} of a snapshot from rank {}", what, published_.owner().value); })
      .status();
}

Result<bool> SnapshotReader::LogHolds(std::uint64_t position) {
  std::atomic_thread_fence(std::memory_order_acquire);  // the reads before the check
  STALELEARN_ASSIGN_OR_RETURN(std::uint64_t oldest, ReadWord(geometry_.log_oldest_offset()));
  return oldest <= position;
}

Result<SnapshotReader::Latest> SnapshotReader::ReadLatestMeta(std::uint64_t after) {
  STALELEARN_ASSIGN_OR_RETURN(std::uint64_t g, ReadWord(geometry_.latest_generation_offset()));
  if (g <= after) return Latest::kNothingNewer;
  std::uint64_t begin = 0;
  STALELEARN_ASSIGN_OR_RETURN(bool meta, ReadMeta(g, meta_, &begin));
  return meta ? Latest::kRead : Latest::kRetry;  // kRetry: its slot is being rewritten
}

Result<const SnapshotMeta*> SnapshotReader::ReadNewerMeta(std::uint64_t since) {
  const SnapshotMeta* result = nullptr;
  STALELEARN_RETURN_IF_ERROR(Retry(
      [&]() -> Result<bool> {
        STALELEARN_ASSIGN_OR_RETURN(const Latest latest, ReadLatestMeta(since));
        if (latest != Latest::kRead) return latest == Latest::kNothingNewer;  // else read the newest again
        // Its clocks cannot be seen before the snapshot was published.
        STALELEARN_RETURN_IF_ERROR(AdvanceSimulatedTime(0));
        result = &meta_;
        return true;
      },
      "the meta"));
  return result;
}

Result<const SnapshotMeta*> SnapshotReader::ReadChanges(const SnapshotMeta& since, const RangeSink& sink) {
  const SnapshotMeta* result = nullptr;
  bool too_far_behind = false;
  STALELEARN_RETURN_IF_ERROR(
      WaitUntil(
          wait_, transport_,
          [&]() -> Result<bool> {
            STALELEARN_ASSIGN_OR_RETURN(const Latest latest, ReadLatestMeta(since.generation));
            if (latest != Latest::kRead) return latest == Latest::kNothingNewer;  // else read the newest again
            // The records stream through a buffer of kLogChunkBytes (plus a
            // record cut at a chunk's end, carried to the next): a reader's
            // memory follows the chunk, not the log (with 64 compute ranks x
            // 8 memory ranks, whole-log copies were 512 buffers of up to 3
            // shards each). Each chunk is checked against the oldest-valid
            // word after it is read; a chunk overwritten meanwhile falls back
            // to the whole read, which replaces whatever records were applied.
            STALELEARN_ASSIGN_OR_RETURN(bool logged, StreamLog(since.log_end, meta_.log_end, sink));
            if (!logged) {
              too_far_behind = true;
              return true;
            }
            STALELEARN_RETURN_IF_ERROR(AdvanceSimulatedTime(meta_.log_end - since.log_end));
            result = &meta_;
            return true;
          },
          [&] { return fmt::format("the changes of a snapshot from rank {}", published_.owner().value); })
          .status());
  if (!too_far_behind) return result;
  return ReadWholeInstead(since, sink);
}

Result<const SnapshotMeta*> SnapshotReader::ReadWholeInstead(const SnapshotMeta& since, const RangeSink& sink) {
  // The log no longer reaches back to `since`: read the whole shard once.
  ++whole_reads_;
  whole_shard_.resize(geometry_.shard_bytes);
  STALELEARN_ASSIGN_OR_RETURN(std::optional<SnapshotMeta> whole, ReadNewer(since.generation, whole_shard_));
  if (whole) sink(0, whole_shard_);
  std::vector<std::byte>().swap(whole_shard_);  // memory follows what changed, not the shard
  return whole ? &meta_ : nullptr;
}

Status SnapshotReader::IssueRowGets(std::span<const RowRead> rows, std::vector<transport::RequestPtr>& requests) {
  const std::size_t data = geometry_.data_offset();
  for (const RowRead& r : rows) {
    STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr request,
                                transport_.Get(r.destination, r.bytes, published_, data + r.offset));
    requests.push_back(std::move(request));
  }
  return Status::Ok();
}

Result<bool> SnapshotReader::PatchRows(std::span<const RowRead> rows, std::uint64_t begin0, std::uint64_t* patched) {
  by_offset_.resize(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) by_offset_[i] = i;
  std::ranges::sort(by_offset_, {}, [&](std::size_t i) { return rows[i].offset; });
  // The first read that ends after `offset` (reads are disjoint or
  // identical, so those ending at or before it come first in offset order).
  const auto first_after = [&](std::size_t offset) {
    return std::ranges::partition_point(by_offset_, [&](std::size_t i) { return rows[i].offset + rows[i].bytes <= offset; });
  };
  // A record covers whole rows, a read whole rows (one, or a range of
  // them): copy into each read the part of the record it overlaps.
  const auto copy = [&](std::size_t offset, std::span<const std::byte> bytes) {
    const std::size_t end = offset + bytes.size();
    for (auto it = first_after(offset); it != by_offset_.end() && rows[*it].offset < end; ++it) {
      const RowRead& r = rows[*it];
      const std::size_t from = std::max(r.offset, offset);
      const std::size_t to = std::min(r.offset + r.bytes, end);
      std::memcpy(r.destination + (from - r.offset), bytes.data() + (from - offset), to - from);
    }
  };
  // Streaming the log gets every record published since begin0; picking
  // gets the change index (8 bytes a record) and the records that overlap
  // the rows, about the rows' share of the shard when writes spread evenly
  // (fewer under stratified scheduling: while a stripe is read, the other
  // ranks write other stripes). Stream only where picking would cost as
  // much at that share. A 3:1 stripe load (28% of the shard) once streamed
  // every record the other ranks pushed while it read: 100-200 MB an
  // epoch a rank in real time, against 80 MB of stripes.
  // Up to the second meta's generation, or only the first's own records
  // where nothing after it can change the rows (FinishRowsOfEach's
  // UnchangedAfter).
  const SnapshotMeta& to = patch_first_only_ ? first_meta_ : meta_;
  const std::uint64_t index_from = live_holds_first_ ? first_meta_.index_end : first_meta_.index_begin;
  const double log_bytes = static_cast<double>(to.log_end - begin0);
  const double records = static_cast<double>(to.index_end - index_from);
  const double index_bytes = static_cast<double>(PublishedGeometry::kIndexEntryBytes) * records;
  const double share = static_cast<double>(BytesOf(rows)) / static_cast<double>(geometry_.shard_bytes);
  if (index_bytes + share * log_bytes >= log_bytes) {
    *patched = to.log_end - begin0;
    return StreamLog(begin0, to.log_end, copy);
  }
  // Take only the records that overlap the rows, found through the change
  // index: a stripe load at 64:8 got 130 KB of records a memory rank, of
  // which its stripe's were 2 KB.
  const RecordPicker overlapping{[&](std::size_t offset, std::size_t length) {
    const auto it = first_after(offset);
    return it != by_offset_.end() && rows[*it].offset < offset + length ? kAnyRecord : kNotPicked;
  }};
  *patched = 0;
  return planner_.PatchPicked(index_from, to.index_end, begin0, overlapping, copy, patched);
}

Result<std::uint64_t> SnapshotReader::ReadRows(std::span<const RowRead> rows) {
  const auto body = [&]() -> Status {
    requests_.clear();
    STALELEARN_RETURN_IF_ERROR(IssueRowGets(rows, requests_));
    return WaitForGets();
  };
  const auto patch = [&](std::uint64_t begin0, std::uint64_t* patched) { return PatchRows(rows, begin0, patched); };
  STALELEARN_ASSIGN_OR_RETURN(bool read, ReadWhole(0, BytesOf(rows), body, patch));
  if (!read) return FailedPrecondition(fmt::format("rank {} has published no snapshot yet", published_.owner().value));
  return meta_.generation;
}

}  // namespace stalelearn::sync
