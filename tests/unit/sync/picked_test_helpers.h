// Helpers shared by the picked-read tests (snapshot_picked_test.cc,
// snapshot_writers_test.cc): a table of 256-byte rows, a picker of some of
// its rows, a master update that marks the rows changed, and a sink that
// records what a reader installed. Test-only; not thread-safe.
#pragma once

#include <algorithm>
#include <cstring>
#include <set>
#include <span>
#include <vector>

#include "framework/sync/changed_rows.h"
#include "framework/sync/snapshot.h"
#include "tests/unit/sync/ring_fixture.h"
#include "tests/unit/sync/snapshot_checks.h"

namespace stalelearn::sync::picked_test {

using testing::RingFixture;

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
