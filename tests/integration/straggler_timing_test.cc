// Straggler patterns on the timing backend (ranks as threads, virtual-time
// scheduler): with transient stragglers each compute rank is charged exactly
// the simulated compute of the clocks its seed delays, and a rerun repeats
// the timeline; a slow link (option link_bandwidth_gb_per_s) costs transfer time.
#include <gtest/gtest.h>

#include "backends/builtin.h"
#include "backends/timing/timing_options.h"
#include "framework/runtime/straggler.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

proto::Config TransientConfig(double probability, std::uint64_t seed) {
  proto::Config config = TestConfig("SSP", 2, /*memory_ranks=*/1, /*epochs=*/2, /*samples_per_clock=*/16);
  UseStaleLearnTiming(config);
  config.mutable_training()->mutable_straggler()->set_transient_probability(probability);
  config.mutable_training()->mutable_straggler()->set_transient_delay(3);
  config.mutable_training()->mutable_straggler()->set_seed(seed);
  return config;
}

TEST(TransientStraggler, ChargesEachComputeRankTheDrawnClocksAsSimulatedCompute) {
  const CountingApp app(/*samples=*/480);  // 160 samples per compute rank: 10 equal clocks per epoch
  const proto::Config base = TransientConfig(0, 9);
  const proto::Config transient = TransientConfig(0.3, 9);
  const LocalRun normal = RunLocal(base, app, 4);
  const LocalRun slowed = RunLocal(transient, app, 4);
  const LocalRun again = RunLocal(transient, app, 4);
  const proto::Simulated& n = normal.report().simulated();
  const proto::Simulated& s = slowed.report().simulated();
  ASSERT_EQ(s.ranks_size(), 4);
  int delayed_clocks = 0;
  for (int rank = 0; rank < 3; ++rank) {
    const std::int64_t clocks = normal.report().ranks(rank).clocks();
    ASSERT_EQ(clocks, 20);
    const runtime::Straggler straggler(transient.training().straggler(), rank, transient.seed());
    double expected_scale = 0;
    for (std::int64_t t = 0; t < clocks; ++t) {
      expected_scale += straggler.ComputeScale(t) / static_cast<double>(clocks);
      delayed_clocks += straggler.ComputeScale(t) > 1;
    }
    const double ratio = s.ranks(rank).compute_seconds() / n.ranks(rank).compute_seconds();
    EXPECT_NEAR(ratio, expected_scale, 0.01 * expected_scale) << "compute rank " << rank;
    EXPECT_EQ(again.report().simulated().ranks(rank).compute_seconds(), s.ranks(rank).compute_seconds());
  }
  EXPECT_GT(delayed_clocks, 5) << "p = 0.3 over 60 clocks";
  EXPECT_LT(delayed_clocks, 60);
  EXPECT_GT(s.total_seconds(), n.total_seconds());
  EXPECT_EQ(again.report().simulated().total_seconds(), s.total_seconds());
  EXPECT_EQ(again.report().model_checksum(), slowed.report().model_checksum());
}

TEST(SlowLink, TheBandwidthOptionReplacesTheLinkPresetsAndCostsTransferTime) {
  const CountingApp app(/*samples=*/480);
  proto::Config capped = TransientConfig(0, 1);
  UseStaleLearnTiming(capped, {{"link_bandwidth_gb_per_s", "0.05"}});
  const proto::Simulated normal = RunLocal(TransientConfig(0, 1), app, 4).report().simulated();
  const proto::Simulated slow = RunLocal(capped, app, 4).report().simulated();
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_GT(slow.ranks(rank).transfer_seconds(), 2 * normal.ranks(rank).transfer_seconds()) << rank;
    EXPECT_EQ(slow.ranks(rank).compute_seconds(), normal.ranks(rank).compute_seconds()) << rank;
  }
  for (const char* bad : {"0", "-1", "fast", ""}) {
    const auto parsed = backends::timing::ParseTimingOptions({{"link_bandwidth_gb_per_s", bad}});
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.status().message().find("link_bandwidth_gb_per_s"), std::string::npos);
  }
}

}  // namespace
}  // namespace stalelearn::testing
