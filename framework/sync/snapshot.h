// Snapshots of a memory rank's master shard, published in its remote-read-only
// region for compute ranks to read one-sided (I6, I7).
//
// Nothing torn (I3): the publisher writes generation g into buffer g mod K as
// a seqlock (version 2g-1 while writing, 2g when complete) and only then
// advances the latest-generation word. A reader gets latest -> version ->
// header and data -> version again, and accepts only if both versions are 2g;
// otherwise it retries. With K buffers a reader is disturbed only if K newer
// generations are published while it reads.
// Each snapshot carries, per compute rank, the merged clock and the highest
// consumed batch sequence it includes (read-your-writes, I2).
// Timing backend: a snapshot also carries the virtual time it was published
// at; a reader with a simulated clock (WaitOptions::sim) advances it to when
// the data it read can have reached it (SimulatedTime::GetVisibleAt).
//
// SnapshotPublisher: the memory rank's poll thread only.
// SnapshotReader: one compute-rank thread; the transport and the remote
// region must outlive it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "framework/core/status.h"
#include "framework/model/shard_layout.h"
#include "framework/sync/ring_layout.h"
#include "framework/sync/ring_poller.h"
#include "framework/sync/wait_options.h"
#include "framework/transport/transport.h"

namespace stalelearn::sync {

class SnapshotPublisher {
 public:
  SnapshotPublisher(transport::MemoryRegion& published, PublishedGeometry geometry,
                    const model::ModelLayout& layout);

  // Publishes `master` with the poller's merged clocks and consumed sequences
  // as the next generation, stamped `published_at_ps` (the publisher's
  // virtual time; 0 without the timing backend), then updates the control
  // block.
  void Publish(const model::TableSet& master, const RingPoller& poller, std::int64_t published_at_ps = 0);
  std::uint64_t generation() const { return generation_; }

 private:
  transport::MemoryRegion& published_;
  PublishedGeometry geometry_;
  const model::ModelLayout& layout_;
  std::uint64_t generation_ = 0;
  std::vector<std::byte> serialized_;  // planted defect kSnapshotHalfWritten only
};

struct SnapshotMeta {
  std::uint64_t generation = 0;
  std::vector<std::uint64_t> merged_clock;  // per compute rank
  std::vector<std::uint64_t> included;      // per compute rank: sequences 1..included are in
};

class SnapshotReader {
 public:
  SnapshotReader(transport::Transport& transport, const transport::RemoteRegion& published,
                 PublishedGeometry geometry, WaitOptions wait);

  // Reads the latest complete snapshot if its generation is above `after`:
  // its shard bytes into `shard_bytes` (geometry.shard_bytes long) and returns
  // its meta; std::nullopt if nothing newer is published. Blocking.
  Result<std::optional<SnapshotMeta>> ReadNewer(std::uint64_t after, std::span<std::byte> shard_bytes);

  // A consistent read of some rows of the latest snapshot (DIRECT mode): each
  // (offset inside shard bytes, destination, length) is fetched with its own
  // get. Returns the generation read. Blocking.
  struct RowRead {
    std::size_t offset;
    std::byte* destination;
    std::size_t bytes;
  };
  Result<std::uint64_t> ReadRows(std::span<const RowRead> rows);

 private:
  Result<std::uint64_t> ReadWord(std::size_t offset);
  // Runs `body(generation, buffer)` between the two version reads, retrying
  // until it saw one complete generation; nullopt if latest <= `after`. With
  // a simulated clock, then advances it to when `bytes` read by the body can
  // have arrived.
  template <class Body>
  Result<std::optional<std::uint64_t>> ReadConsistent(std::uint64_t after, std::uint64_t bytes, Body&& body);

  transport::Transport& transport_;
  const transport::RemoteRegion& published_;
  PublishedGeometry geometry_;
  WaitOptions wait_;
  std::vector<std::byte> header_;
  std::vector<transport::RequestPtr> requests_;
  std::uint64_t version_and_stamp_[2] = {};  // the re-check's destination
};

}  // namespace stalelearn::sync
