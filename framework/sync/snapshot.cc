#include "framework/sync/snapshot.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "framework/core/planted_defect.h"
#include "framework/model/row_block.h"

namespace stalelearn::sync {

SnapshotPublisher::SnapshotPublisher(transport::MemoryRegion& published, PublishedGeometry geometry,
                                     const model::ModelLayout& layout)
    : published_(published), geometry_(geometry), layout_(layout) {}

void SnapshotPublisher::CollectRanges(const model::TableSet& master, const ChangedRows& changed) {
  ranges_.clear();
  std::size_t table_offset = 0;
  for (std::size_t t = 0; t < master.size(); ++t) {
    const model::RowBlock& block = master[t];
    const std::size_t row_bytes = block.row_bytes();
    if (changed.all()) {
      const std::size_t chunk = std::max<std::size_t>(1, kMaxRecordBytes / std::max<std::size_t>(row_bytes, 1)) * row_bytes;
      for (std::size_t at = 0; at < block.size_bytes(); at += chunk) {
        ranges_.push_back(
            {table_offset + at, std::min(chunk, block.size_bytes() - at), block.bytes().data() + at, kManyWriters});
      }
    } else {
      const model::TableId table{static_cast<std::uint32_t>(t)};
      for (std::int64_t local : changed.rows(table)) {
        ranges_.push_back({table_offset + static_cast<std::size_t>(local) * row_bytes, row_bytes, block.RowBytes(local),
                           changed.writer(table, local)});
      }
    }
    table_offset += block.size_bytes();
  }
  if (DefectPlanted(PlantedDefect::kSnapshotHalfWritten)) {
    // Planted defect (self-tests only): only the first half of what changed is written.
    std::size_t total = 0;
    for (const Range& r : ranges_) total += r.bytes;
    std::size_t keep = total / 2;
    std::size_t n = 0;
    for (; n < ranges_.size() && keep > 0; ++n) {
      ranges_[n].bytes = std::min(ranges_[n].bytes, keep);
      keep -= ranges_[n].bytes;
    }
    ranges_.resize(n);
  }
}

void SnapshotPublisher::WriteLog(std::uint64_t position, const void* source, std::size_t bytes) {
  const std::size_t capacity = geometry_.log_capacity();
  std::byte* log = published_.data() + geometry_.log_offset();
  const std::size_t at = static_cast<std::size_t>(position % capacity);
  const std::size_t first = std::min(bytes, capacity - at);
  std::memcpy(log + at, source, first);
  if (first < bytes) std::memcpy(log, static_cast<const std::byte*>(source) + first, bytes - first);
}

void SnapshotPublisher::Publish(const model::TableSet& master, const RingPoller& poller,
                                std::int64_t published_at_ps) {
  ChangedRows all(layout_, model::MemoryIndex{0});
  all.MarkAll();
  Publish(master, poller, all, published_at_ps);
}

void SnapshotPublisher::Publish(const model::TableSet& master, const RingPoller& poller, const ChangedRows& changed,
                                std::int64_t published_at_ps) {
  const std::uint64_t g = ++generation_;
  std::byte* base = published_.data();
  CollectRanges(master, changed);
  std::uint64_t bytes = 0;
  for (const Range& r : ranges_) bytes += sizeof(std::uint64_t) + r.bytes;
  const std::uint64_t begin = log_end_;
  const std::uint64_t end = begin + bytes;
  const std::size_t capacity = geometry_.log_capacity();
  const bool logged = bytes <= capacity;
  // 1. Readers that still need what the records overwrite must read whole.
  //    A generation too large for the log is not logged at all.
  log_oldest_ = logged ? std::max(log_oldest_, end > capacity ? end - capacity : 0) : end;
  transport::StoreRelease64(base + geometry_.log_oldest_offset(), log_oldest_);
  std::atomic_thread_fence(std::memory_order_release);  // the word before the overwrites
  // 2. The change records, and their keys in the change index.
  if (logged) {
    std::byte* log = base + geometry_.log_offset();
    std::byte* index = base + geometry_.index_offset();
    std::byte* writers = base + geometry_.writers_offset();
    const std::size_t entries = geometry_.index_entries();
    std::size_t in_index = static_cast<std::size_t>(index_end_ % entries);
    std::uint64_t at = begin;
    std::size_t in_log = static_cast<std::size_t>(at % capacity);  // = at mod capacity, kept without dividing
    for (const Range& r : ranges_) {
      const std::uint64_t key = ChangeRecordKey(r.offset, r.bytes);
      const std::size_t record = sizeof key + r.bytes;
      if (in_log + record <= capacity) [[likely]] {  // the record does not wrap
        // Streamed: the log is 3x the shard and cycles through memory; ordinary
        // stores would fetch each line first and evict the master's rows.
        model::StreamRows(log + in_log, reinterpret_cast<const std::byte*>(&key), sizeof key);
        model::StreamRows(log + in_log + sizeof key, r.source, r.bytes);
      } else {
        WriteLog(at, &key, sizeof key);
        WriteLog(at + sizeof key, r.source, r.bytes);
      }
      std::memcpy(index + in_index * PublishedGeometry::kIndexEntryBytes, &key, sizeof key);
      std::memcpy(writers + in_index * PublishedGeometry::kWriterBytes, &r.writer, sizeof r.writer);
      if (++in_index == entries) in_index = 0;
      at += record;
      in_log += record;
      if (in_log >= capacity) in_log -= capacity;
    }
    model::StreamFence();  // the records before the meta that covers them
    index_end_ += ranges_.size();
    if (std::ranges::any_of(ranges_, [](const Range& r) { return r.writer != kManyWriters; })) {
      single_writer_end_ = index_end_;
    }
  }
  record_bytes_ += bytes;
  const std::uint64_t index_begin = index_end_ - (logged ? ranges_.size() : 0);
  // 3. The meta slot, a seqlock.
  const int k = geometry_.MetaSlotOf(g);
  transport::StoreRelease64(base + geometry_.version_offset(k), 2 * g - 1);
  std::atomic_thread_fence(std::memory_order_release);  // odd version before the meta writes
  transport::StoreRelease64(base + geometry_.published_at_offset(k), static_cast<std::uint64_t>(published_at_ps));
  transport::StoreRelease64(base + geometry_.log_begin_offset(k), begin);
  transport::StoreRelease64(base + geometry_.log_end_offset(k), end);
  transport::StoreRelease64(base + geometry_.index_end_offset(k), index_end_);
  transport::StoreRelease64(base + geometry_.single_writer_end_offset(k), single_writer_end_);
  transport::StoreRelease64(base + geometry_.index_begin_offset(k), index_begin);
  for (int c = 0; c < geometry_.compute_ranks; ++c) {
    const model::ComputeIndex ci{c};
    transport::StoreRelease64(base + geometry_.meta_merged_clock_offset(k, ci), poller.merged_clock(ci));
    transport::StoreRelease64(base + geometry_.meta_included_offset(k, ci), poller.consumed(ci));
  }
  transport::StoreRelease64(base + geometry_.version_offset(k), 2 * g);
  // 4. Latest generation first, then the control copies of its clocks: a
  //    reader that saw a clock in the control block then finds a snapshot
  //    holding it. The stamp before the clocks: a reader that sees the new
  //    clocks sees it.
  transport::StoreRelease64(base + geometry_.latest_generation_offset(), g);
  transport::StoreRelease64(base + geometry_.control_published_at_offset(),
                            static_cast<std::uint64_t>(published_at_ps));
  for (int c = 0; c < geometry_.compute_ranks; ++c) {
    const model::ComputeIndex ci{c};
    transport::StoreRelease64(base + geometry_.merged_clock_offset(ci), poller.merged_clock(ci));
    transport::StoreRelease64(base + geometry_.included_offset(ci), poller.consumed(ci));
  }
  // 5. The live rows.
  std::byte* data = base + geometry_.data_offset();
  for (const Range& r : ranges_) model::CopyRows(data + r.offset, r.source, r.bytes);
  // 6. Then the word saying they are all written (the rows before it).
  std::atomic_thread_fence(std::memory_order_release);
  transport::StoreRelease64(base + geometry_.live_generation_offset(), g);
  log_end_ = end;
}

}  // namespace stalelearn::sync
