// What a compute rank gets of a published snapshot (snapshot.h has the
// protocol): SnapshotMeta, a generation's meta slot as read, and
// SnapshotProtocol, the reads of the published region that a read planner
// (SnapshotReadPlanner, snapshot_read_planner.h) builds a refresh from.
// SnapshotReader (snapshot_reader.h) implements them and keeps the seqlock,
// the log window and the whole read to itself; a planner only chooses which
// index entries and log bytes to get, and must check LogHolds after them
// before it uses what it got (a record overwritten meanwhile is torn).
// Not thread-safe: the implementing reader's thread. A meta it returns is
// valid until its next read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "framework/sync/ring_layout.h"

namespace stalelearn::sync {

struct SnapshotMeta {
  std::uint64_t generation = 0;
  std::uint64_t log_end = 0;                // change-log position after this generation
  std::uint64_t index_end = 0;              // records written up to this generation
  std::uint64_t index_begin = 0;            // records written before it (its first record's number)
  std::uint64_t single_writer_end = 0;      // records up to here include one naming a single writer
  std::vector<std::uint64_t> merged_clock;  // per compute rank
  std::vector<std::uint64_t> included;      // per compute rank: sequences 1..included are in
};

class SnapshotProtocol {
 public:
  // Gets a changed range: (shard offset, its bytes as of the generation that changed it).
  using RangeSink = std::function<void(std::size_t shard_offset, std::span<const std::byte> bytes)>;
  // The log streams through a buffer of this many bytes (plus one record
  // cut at its end): a reader's memory does not follow the log. A planner
  // fetches rows in batches of about this size too.
  static constexpr std::size_t kLogChunkBytes = std::size_t{1} << 20;

  virtual const PublishedGeometry& geometry() const = 0;

  // Runs `step` until it returns true, progressing the transport between
  // tries (WaitUntil); a timeout's error names `what` ("the picked changes")
  // of a snapshot from the publishing rank.
  virtual Status Retry(const std::function<Result<bool>()>& step, std::string_view what) = 0;

  // The latest generation's meta into latest_meta(), if it is newer than
  // `after` (kRead); kRetry while its slot is being rewritten (seqlock).
  enum class Latest { kNothingNewer, kRetry, kRead };
  virtual Result<Latest> ReadLatestMeta(std::uint64_t after) = 0;
  virtual const SnapshotMeta& latest_meta() const = 0;

  // Whether the log still holds every record from log position `position`
  // on, read after (acquire) whatever was got before: what those gets
  // returned is then valid.
  virtual Result<bool> LogHolds(std::uint64_t position) = 0;

  // One get from a circular part of the published region: the change log
  // (`first` is a log position) or the change index or its writers (`first`
  // is a record number). `bytes` may wrap around the ring's end.
  enum class Ring { kLog, kIndex, kWriters };
  struct RingGet {
    Ring ring;
    std::uint64_t first;
    std::size_t bytes;
    std::byte* into;
  };
  // Issues every get, then waits for all of them.
  virtual Status Get(std::span<const RingGet> gets) = 0;

  // Advances the reader's clock (its time service; nothing in real time) to
  // when `bytes` of the latest meta's generation can have reached it.
  virtual Status AdvanceSimulatedTime(std::uint64_t bytes) = 0;

  // Every change record since `since` in log order, or the whole shard once
  // when the log no longer reaches back to it (SnapshotReader::ReadChanges).
  virtual Result<const SnapshotMeta*> ReadChanges(const SnapshotMeta& since, const RangeSink& sink) = 0;
  // The whole shard once, for a reader the log no longer reaches:
  // sink(0, whole shard); counted in whole_reads().
  virtual Result<const SnapshotMeta*> ReadWholeInstead(const SnapshotMeta& since, const RangeSink& sink) = 0;
  virtual std::uint64_t whole_reads() const = 0;

 protected:
  ~SnapshotProtocol() = default;
};

}  // namespace stalelearn::sync
