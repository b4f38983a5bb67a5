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
//   [16 + 8*i]          commit word of slot i: sequence of the batch in it
//   [slots_offset + i*slot_bytes]  slot i: BatchHeader + payload
// Batch with sequence n (1, 2, ...) goes to slot (n-1) mod R.
//
// Published region: one per memory rank, remote-read-only (I7).
//   control block: latest snapshot generation, then per compute rank:
//     head (batches consumed: merged or rejected; backpressure, I5),
//     merged clock and included sequence as of the latest snapshot, then
//     the latest snapshot's published-at word (timing backend, else 0).
//   K snapshot buffers: version word (odd while written, 2*generation when
//   complete: a seqlock, I3), published-at word (timing backend: the
//   publisher's virtual time in picoseconds, else 0), merged clock[C],
//   included sequence[C], then the shard bytes (framework/model/shard_layout.h).
// Value type; thread-safe.
#pragma once

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
  std::size_t commit_word_offset(int slot) const { return 16 + 8 * static_cast<std::size_t>(slot); }
  std::size_t slots_offset() const { return RoundUp(16 + 8 * static_cast<std::size_t>(slots), kCacheLine); }
  std::size_t slot_offset(int slot) const { return slots_offset() + static_cast<std::size_t>(slot) * slot_bytes; }
  std::size_t region_bytes() const { return slot_offset(slots); }
  int SlotOf(std::uint64_t sequence) const { return static_cast<int>((sequence - 1) % static_cast<std::uint64_t>(slots)); }
};

struct PublishedGeometry {
  int compute_ranks = 1;
  std::size_t shard_bytes = 0;
  int buffers = 3;  // a buffer is rewritten every `buffers` publishes

  // Control block.
  std::size_t latest_generation_offset() const { return 0; }
  std::size_t head_offset(model::ComputeIndex c) const { return 8 + 8 * static_cast<std::size_t>(c.value); }
  std::size_t merged_clock_offset(model::ComputeIndex c) const { return head_offset(c) + 8 * n(); }
  std::size_t included_offset(model::ComputeIndex c) const { return head_offset(c) + 16 * n(); }
  std::size_t control_published_at_offset() const { return 8 + 24 * n(); }
  std::size_t control_bytes() const { return RoundUp(16 + 24 * n(), kCacheLine); }

  // Snapshot buffer b.
  std::size_t buffer_header_bytes() const { return RoundUp(16 + 16 * n(), kCacheLine); }
  std::size_t buffer_bytes() const { return buffer_header_bytes() + RoundUp(shard_bytes, kCacheLine); }
  std::size_t buffer_offset(int b) const { return control_bytes() + static_cast<std::size_t>(b) * buffer_bytes(); }
  std::size_t version_offset(int b) const { return buffer_offset(b); }
  // Right after the version word, so one 16-byte get re-checks both.
  std::size_t published_at_offset(int b) const { return version_offset(b) + 8; }
  std::size_t buffer_merged_clock_offset(int b, model::ComputeIndex c) const {
    return buffer_offset(b) + 16 + 8 * static_cast<std::size_t>(c.value);
  }
  std::size_t buffer_included_offset(int b, model::ComputeIndex c) const {
    return buffer_merged_clock_offset(b, c) + 8 * n();
  }
  std::size_t buffer_data_offset(int b) const { return buffer_offset(b) + buffer_header_bytes(); }
  std::size_t region_bytes() const { return buffer_offset(buffers); }
  int BufferOf(std::uint64_t generation) const {
    return static_cast<int>(generation % static_cast<std::uint64_t>(buffers));
  }

 private:
  std::size_t n() const { return static_cast<std::size_t>(compute_ranks); }
};

}  // namespace stalelearn::sync
