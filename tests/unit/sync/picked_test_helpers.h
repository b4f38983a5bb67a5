// Helpers shared by the picked-read tests (snapshot_picked_test.cc,
// snapshot_writers_test.cc): a table of 256-byte rows, a picker of some of
// its rows, a master update that marks the rows changed, and a sink that
// records what a reader installed. Test-only; not thread-safe.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "framework/sync/changed_rows.h"
#include "framework/sync/snapshot.h"
#include "framework/transport/forwarding_transport.h"
#include "tests/unit/sync/ring_fixture.h"
#include "tests/unit/sync/snapshot_checks.h"

namespace stalelearn::sync::picked_test {

using testing::RingFixture;

// A NIC that takes its time over reads of region bytes [begin, end) (the
// change log, or the live shard): a get there copies its first half, waits
// 100 us, then copies the rest, so a publisher racing it overwrites what it
// reads (what the reader's re-checks or patch must catch).
class SlowReads final : public transport::ForwardingTransport {
 public:
  SlowReads(transport::Transport& inner, std::size_t begin, std::size_t end)
      : ForwardingTransport(inner), begin_(begin), end_(end) {}
  Result<transport::RequestPtr> Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                    std::uint64_t offset) override {
    if (offset < begin_ || offset >= end_ || bytes < 8) return ForwardingTransport::Get(dst, bytes, src, offset);
    const std::size_t half = bytes / 2;
    STALELEARN_ASSIGN_OR_RETURN(transport::RequestPtr first, ForwardingTransport::Get(dst, half, src, offset));
    STALELEARN_RETURN_IF_ERROR(first->Wait(std::chrono::seconds(10)));
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    return ForwardingTransport::Get(static_cast<std::byte*>(dst) + half, bytes - half, src, offset + half);
  }

 private:
  std::size_t begin_, end_;
};

constexpr std::int64_t kRows = 512;
constexpr std::int32_t kWidth = 64;  // 256-byte rows: a row read or skipped shows in the bytes got
constexpr std::size_t kRowBytes = kWidth * 4;

inline std::vector<model::TableSpec> WideTable() { return {{"w", model::ElementType::kInt32, kRows, kWidth}}; }

// Picks the one-row records of `rows` (the row is the id) and every record of
// several rows (a whole-shard publish), as a partial replica holding `rows` does.
// id_count = kRows promises dense ids (RecordPicker::id_count), as the
// replica refresher does; 0 leaves the reader to sort them.
inline SnapshotReader::RecordPicker PickRows(std::set<std::int64_t> rows, std::size_t id_count = 0) {
  return {[rows](std::size_t offset, std::size_t bytes) -> std::int64_t {
            if (bytes != kRowBytes) return SnapshotReader::kAnyRecord;
            const auto row = static_cast<std::int64_t>(offset / kRowBytes);
            return rows.contains(row) ? row : SnapshotReader::kNotPicked;
          },
          id_count};
}

inline void SetRows(RingFixture& f, ChangedRows& changed, const std::vector<std::int64_t>& rows, std::int32_t value,
             std::uint16_t writer = kManyWriters) {
  for (std::int64_t r : rows) {
    for (std::int32_t& x : f.merger().mutable_master()[0].IntRow(r)) x = value;
    changed.Mark(model::TableId{0}, r, writer);
  }
}

// What a reader installed: the value of each row it was given, and how often.
struct Installed {
  std::vector<std::int32_t> value = std::vector<std::int32_t>(kRows, -1);
  std::vector<int> times = std::vector<int>(kRows, 0);
  int mixed_rows = 0;  // rows whose elements differ: a torn row
  void Sink(std::size_t offset, std::span<const std::byte> bytes) {
    for (std::size_t at = 0; at < bytes.size(); at += kRowBytes) {
      std::int32_t row[kWidth];
      std::memcpy(row, bytes.data() + at, kRowBytes);
      const std::size_t r = (offset + at) / kRowBytes;
      for (std::int32_t x : row) mixed_rows += x != row[0];
      value[r] = row[0];
      ++times[r];
    }
  }
};

// The latest generation's live rows as if still in writing (snapshot.h,
// step 5 before step 6): the live-generation word one behind the latest, so
// a read laying records from that generation's first ones must take them.
inline void LiveRowsStillInWriting(RingFixture& f, const PublishedGeometry& g) {
  std::byte* base = f.published_region().data();
  const std::uint64_t latest = transport::LoadAcquire64(base + g.latest_generation_offset());
  transport::StoreRelease64(base + g.live_generation_offset(), latest - 1);
}

// The wide table published whole once (generation 1), with the changed-row
// set and the publisher that later generations use.
struct PublishedWideTable {
  RingFixture f{4, 1, WideTable()};
  PublishedGeometry g = f.published_geometry();
  ChangedRows changed{f.layout(), model::MemoryIndex{0}};
  SnapshotPublisher publisher{f.published_region(), g, f.layout()};
  PublishedWideTable() {
    testing::FillMaster(f.merger(), 1);
    publisher.Publish(f.merger().master(), f.poller());
  }
};

}  // namespace stalelearn::sync::picked_test
