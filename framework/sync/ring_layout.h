// Byte layout of the registered regions that carry the data plane (framework/README.md,
// data flow). Every rank computes the same geometry from the config, so no
// offsets travel at run time.
//
// Ring region: one per (compute rank c, memory rank m), registered on m with
// remote write; only c imports its key (I7).
//   [0]                 finish word: total batches c sent + 1 (0 = running)
//   [8]                 released word: 1 once c needs nothing more from the
//                       memory rank (its flushes done, the final model read).
//                       The memory rank progresses until every ring is
//                       released: over tcp a flush or get completes only
//                       while its target progresses.
//   [16]                heartbeat word: a counter c raises about ten times a
//                       second while alive (faults.dead_after_seconds;
//                       framework/runtime/peer_liveness.h), else 0
//   [24 + 8*i]          commit word of slot i: sequence of the batch in it
//   [slots_offset + i*slot_bytes]  slot i: BatchHeader + payload
// Batch with sequence n (1, 2, ...) goes to slot (n-1) mod R.
//
// Published region: one per memory rank, remote-read-only (I7).
//   control block: latest snapshot generation, then per compute rank:
//     head (batches consumed: merged or rejected; backpressure, I5),
//     merged clock and included sequence as of the latest snapshot, then
//     the latest snapshot's published-at word (timing backend, else 0), then
//     the change log's oldest valid position.
//   K meta slots (slot g mod K holds generation g's meta as a seqlock, I3):
//     version (odd while written, 2*generation when complete), published-at
//     (timing backend: the publisher's virtual time in picoseconds, else 0),
//     log begin and log end (positions of generation g's change records),
//     index end (the number of records written up to and with generation g),
//     index begin (the number written before it: g's first record number),
//     single-writer end (the index end of the latest generation with a
//     record naming a single writer: a reader whose range lies below it
//     need not read the writers), merged clock[C], included sequence[C].
//   the live shard (framework/model/shard_layout.h): rows are rewritten in
//     place when they change.
//   the change log: a circular buffer of change records (u64 key: shard
//     offset | row bytes << 40, then the row's bytes), generation after
//     generation; positions grow forever, byte p lives at p mod log_capacity.
//   the change index: a circular buffer of the change records' keys, one
//     8-byte entry per record; record number i lives at i mod index_entries.
//     Records are contiguous in the log from their generation's log begin,
//     so the keys give their positions. A reader picks records by key from
//     it and gets only the rows it holds. It has room for as many records as
//     the log can hold, so an entry outlives its record: a record still in
//     the log (the log's oldest-valid word says so) has its entry intact.
//   the change writers: beside the index, one u16 per record: who changed
//     the row in that generation (changed_rows.h: compute rank c + 1, or
//     0xFFFF for several or unknown). A reader skips a row whose records
//     since its generation all name it alone.
//   the reply areas: one per compute rank c, reply_bytes each: the rows c
//     last asked for (a kRowRequest batch), written by the memory rank
//     (sync/row_gather.h): sequence of the request (written last), rows,
//     published-at, checksum of the rows, then the rows in request order.
//   snapshot.h says how readers get a consistent generation from these.
// Value type; thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "framework/model/rank_index.h"

namespace stalelearn::sync {

inline constexpr std::size_t kCacheLine = 64;
inline constexpr std::size_t RoundUp(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

struct RingGeometry {
  int slots = 8;
  std::size_t slot_bytes = 1 << 20;  // multiple of 64

  std::size_t finish_word_offset() const { return 0; }
  std::size_t released_word_offset() const { return 8; }
  std::size_t heartbeat_word_offset() const { return 16; }
  std::size_t commit_word_offset(int slot) const { return 24 + 8 * static_cast<std::size_t>(slot); }
  std::size_t slots_offset() const { return RoundUp(24 + 8 * static_cast<std::size_t>(slots), kCacheLine); }
  std::size_t slot_offset(int slot) const { return slots_offset() + static_cast<std::size_t>(slot) * slot_bytes; }
  std::size_t region_bytes() const { return slot_offset(slots); }
  int SlotOf(std::uint64_t sequence) const { return static_cast<int>((sequence - 1) % static_cast<std::uint64_t>(slots)); }
};

struct PublishedGeometry {
  int compute_ranks = 1;
  std::size_t shard_bytes = 0;
  int meta_slots = 4;         // a meta slot is rewritten every `meta_slots` publishes
  std::size_t log_bytes = 0;  // change-log capacity if above MinLogBytes()
  std::size_t min_row_bytes = 4;  // the shard's smallest row (sizes the change index)
  std::size_t reply_bytes = 0;    // a compute rank's reply area (row_gather.h): header + rows; 0: no areas

  // Every generation fits the log: one that changes every row of a shard of
  // 4-byte rows (the worst case, 12 record bytes per 4 data bytes); that is
  // ~2.7 generations changing every row of 84-byte rows.
  std::size_t MinLogBytes() const { return RoundUp(3 * shard_bytes + 4096, kCacheLine); }
  std::size_t log_capacity() const { return std::max(log_bytes, MinLogBytes()); }
  // A record takes at least 8 + min_row_bytes of log.
  std::size_t index_entries() const { return log_capacity() / (8 + std::max<std::size_t>(min_row_bytes, 4)) + 1; }

  // Control block.
  std::size_t latest_generation_offset() const { return 0; }
  std::size_t head_offset(model::ComputeIndex c) const { return 8 + 8 * static_cast<std::size_t>(c.value); }
  std::size_t merged_clock_offset(model::ComputeIndex c) const { return head_offset(c) + 8 * n(); }
  std::size_t included_offset(model::ComputeIndex c) const { return head_offset(c) + 16 * n(); }
  std::size_t control_published_at_offset() const { return 8 + 24 * n(); }
  std::size_t log_oldest_offset() const { return 16 + 24 * n(); }
  // The newest generation whose live rows are all written (snapshot.h, step 6).
  std::size_t live_generation_offset() const { return 24 + 24 * n(); }
  std::size_t control_bytes() const { return RoundUp(32 + 24 * n(), kCacheLine); }

  // Meta slot k.
  std::size_t meta_bytes() const { return RoundUp(kMetaHeaderBytes + 16 * n(), kCacheLine); }
  std::size_t meta_offset(int k) const { return control_bytes() + static_cast<std::size_t>(k) * meta_bytes(); }
  std::size_t version_offset(int k) const { return meta_offset(k); }
  std::size_t published_at_offset(int k) const { return meta_offset(k) + 8; }
  std::size_t log_begin_offset(int k) const { return meta_offset(k) + 16; }
  std::size_t log_end_offset(int k) const { return meta_offset(k) + 24; }
  std::size_t index_end_offset(int k) const { return meta_offset(k) + 32; }
  std::size_t single_writer_end_offset(int k) const { return meta_offset(k) + 40; }
  std::size_t index_begin_offset(int k) const { return meta_offset(k) + 48; }
  static constexpr std::size_t kMetaHeaderBytes = 56;  // the words above, then the clocks
  std::size_t meta_merged_clock_offset(int k, model::ComputeIndex c) const {
    return meta_offset(k) + kMetaHeaderBytes + 8 * static_cast<std::size_t>(c.value);
  }
  std::size_t meta_included_offset(int k, model::ComputeIndex c) const {
    return meta_merged_clock_offset(k, c) + 8 * n();
  }
  int MetaSlotOf(std::uint64_t generation) const {
    return static_cast<int>(generation % static_cast<std::uint64_t>(meta_slots));
  }

  // The live shard, the change log and the change index.
  std::size_t data_offset() const { return meta_offset(meta_slots); }
  std::size_t log_offset() const { return data_offset() + RoundUp(shard_bytes, kCacheLine); }
  std::size_t index_offset() const { return log_offset() + log_capacity(); }
  std::size_t writers_offset() const { return index_offset() + kIndexEntryBytes * index_entries(); }
  std::size_t replies_offset() const { return RoundUp(writers_offset() + kWriterBytes * index_entries(), kCacheLine); }
  // Compute rank c's reply area (reply_bytes; none when 0).
  std::size_t reply_offset(model::ComputeIndex c) const {
    return replies_offset() + static_cast<std::size_t>(c.value) * reply_bytes;
  }
  std::size_t region_bytes() const { return replies_offset() + n() * reply_bytes; }
  static constexpr std::size_t kIndexEntryBytes = 8;
  static constexpr std::size_t kWriterBytes = 2;

 private:
  std::size_t n() const { return static_cast<std::size_t>(compute_ranks); }
};

// A change record's key: where the row lives in the shard bytes and its size.
inline constexpr int kRecordSizeShift = 40;
inline std::uint64_t ChangeRecordKey(std::size_t shard_offset, std::size_t row_bytes) {
  return static_cast<std::uint64_t>(shard_offset) | (static_cast<std::uint64_t>(row_bytes) << kRecordSizeShift);
}
inline std::size_t RecordShardOffset(std::uint64_t key) { return key & ((std::uint64_t{1} << kRecordSizeShift) - 1); }
inline std::size_t RecordRowBytes(std::uint64_t key) { return key >> kRecordSizeShift; }
// Largest byte range one change record carries (a multiple of the row size,
// or one row if a row is larger). A reader holds a chunk of the log plus at
// most one record cut at the chunk's end, so this bounds its memory too.
inline constexpr std::size_t kMaxRecordBytes = std::size_t{64} << 10;

}  // namespace stalelearn::sync
