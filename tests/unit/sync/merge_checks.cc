#include "tests/unit/sync/merge_checks.h"

#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "framework/core/error.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/shard_merger.h"

namespace stalelearn::sync::testing {

void CheckStalenessAwareScalesStaleBatches() {
  const model::MemoryIndex shard{0};
  const model::ModelLayout layout({{"w", model::ElementType::kFloat32, 3, 4}}, 1, model::PartitionScheme::kRange);
  MergePolicySpec spec;
  spec.name = "staleness_aware";
  ShardMerger merger(layout, shard, 1, ValueOrThrow(CreateMergePolicies({spec}, layout, shard)));
  // Row r gets delta 8 in a batch r epochs x 1024 stale (0, 1, 3 epochs).
  constexpr std::uint32_t kStale[] = {0, 1024, 3072};
  constexpr float kWant[] = {8.0f, 4.0f, 2.0f};
  for (std::uint64_t r = 0; r < 3; ++r) {
    BatchEncoder encoder(layout.tables());
    const std::vector<float> delta(4, 8.0f);
    encoder.Add(model::TableId{0}, model::RowId{static_cast<std::int64_t>(r)}, std::as_bytes(std::span(delta)));
    const std::vector<std::byte> bytes = encoder.Seal(r + 1, /*clock=*/r, kEndOfClock, kStale[r]);
    ASSERT_TRUE(merger.Merge(ValueOrThrow(DecodeBatch(bytes, r + 1, layout, shard))).ok());
  }
  for (std::int64_t r = 0; r < 3; ++r) {
    for (const float x : merger.master()[0].FloatRow(r)) {
      EXPECT_EQ(x, kWant[r]) << (r == 0 ? "a fresh batch was not merged as sum" : kUnscaledStaleDeltaMessage)
                             << ": row " << r << " (" << kStale[r] / 1024 << " epochs stale)";
    }
  }
}

}  // namespace stalelearn::sync::testing
