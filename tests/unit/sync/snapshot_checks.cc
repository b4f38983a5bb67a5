#include "tests/unit/sync/snapshot_checks.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/unit/sync/ring_fixture.h"

namespace stalelearn::sync::testing {

void FillMaster(ShardMerger& merger, std::int32_t value) {
  model::RowBlock& block = merger.mutable_master()[0];
  for (std::int64_t r = 0; r < block.rows(); ++r) {
    for (std::int32_t& x : block.IntRow(r)) x = value;
  }
}

bool AllEqual(std::span<const std::byte> shard, std::int32_t* value) {
  std::vector<std::int32_t> ints(shard.size() / 4);
  std::memcpy(ints.data(), shard.data(), shard.size());
  *value = ints.at(0);
  for (std::int32_t x : ints) {
    if (x != ints[0]) return false;
  }
  return true;
}

void CheckConcurrentReaderSeesOnlyWholeGenerations(int reads) {
  // Reads that found a newer generation than the read before: each raced
  // with at least one publish.
  constexpr int kMinRacingReads = 500;
  RingFixture f;
  const PublishedGeometry g = f.published_geometry();
  SnapshotPublisher publisher(f.published_region(), g, f.layout());
  FillMaster(f.merger(), 0);
  publisher.Publish(f.merger().master(), f.poller());
  SnapshotReader reader(f.transport(), f.remote_published(), g, WaitOptions{});
  std::vector<std::byte> shard(g.shard_bytes);
  int torn = 0;
  int wrong_generation = 0;
  std::uint64_t last = 0;
  int racing_reads = 0;
  // How far both threads got: with both far along and still too few reads
  // that raced, the reader is not seeing the writer's generations. Counted in
  // progress, not seconds, so a loaded machine only makes the test slower.
  constexpr int kGiveUpAfter = 20000000;  // on one shared core a read races about once per 10,000
  std::atomic<std::int64_t> published{0};
  {
    // Joined (after a stop request) when this scope ends, also after a failed read.
    std::jthread writer([&](std::stop_token stop) {
      for (std::int32_t v = 1; !stop.stop_requested(); ++v) {
        FillMaster(f.merger(), v);
        publisher.Publish(f.merger().master(), f.poller());
        published.fetch_add(1, std::memory_order_relaxed);
      }
    });
    // Reads go on until enough of them raced with the writer: a reader that
    // finished before the writer thread ran would pass whatever the
    // publisher does.
    for (int i = 0; i < reads || racing_reads < kMinRacingReads; ++i) {
      if (i > kGiveUpAfter && published.load(std::memory_order_relaxed) > kGiveUpAfter) {
        ADD_FAILURE() << "only " << racing_reads << " of " << i << " reads raced with the writer's "
                      << published.load() << " publishes";
        break;
      }
      Result<std::optional<SnapshotMeta>> meta = reader.ReadNewer(0, shard);
      if (!meta.ok() || !meta->has_value()) {
        ADD_FAILURE() << "read " << i << " got no snapshot: "
                      << (meta.ok() ? std::string("nothing published") : meta.status().ToString());
        break;
      }
      std::int32_t value;
      if (!AllEqual(shard, &value)) ++torn;
      // Generation g holds the value written just before its publish: g - 1.
      if (static_cast<std::uint64_t>(value) + 1 != (*meta)->generation) ++wrong_generation;
      EXPECT_GE((*meta)->generation, last) << "generations went backwards";
      racing_reads += (*meta)->generation > last && last > 0;
      last = (*meta)->generation;
    }
  }
  EXPECT_EQ(torn, 0) << "torn snapshots read: a reader installed a partly written generation (I3)";
  EXPECT_EQ(wrong_generation, 0) << "snapshots whose data belongs to another generation";
}

}  // namespace stalelearn::sync::testing
