// Training on the timing backend over local, ranks as threads under the
// virtual-time scheduler (issue 5): the same config gives the same model bits
// and the same simulated timeline on every run, a memory rank never merges a
// batch before the virtual time it became visible, and a straggler is
// charged more virtual compute time instead of sleeping.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "apps/mf/datasets.h"
#include "apps/mf/mf_app.h"
#include "backends/builtin.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "tests/integration/movielens_file.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

// A config of `mode` priced on the StaleLearn presets, timing over local.
proto::Config TimedConfig(std::string mode, int memory_ranks, int epochs, int samples_per_clock) {
  proto::Config config = TestConfig(mode, mode == "SSP" ? 2 : 0, memory_ranks, epochs, samples_per_clock);
  UseStaleLearnTiming(config);
  return config;
}

// What must repeat exactly: the model bits and every simulated time.
struct Timeline {
  std::string model_checksum;
  std::vector<double> curve_simulated_seconds;
  std::string simulated;  // the report's simulated section, serialized
};

Timeline TimelineOf(const proto::Report& report) {
  Timeline t;
  t.model_checksum = report.model_checksum();
  for (const proto::CurvePoint& p : report.curve()) t.curve_simulated_seconds.push_back(p.simulated_seconds());
  t.simulated = report.simulated().SerializeAsString();
  return t;
}

void ExpectSimulatedSectionIsComplete(const proto::Report& report, int world_size) {
  ASSERT_TRUE(report.has_simulated());
  const proto::Simulated& s = report.simulated();
  EXPECT_TRUE(s.deterministic());
  EXPECT_EQ(s.memory_preset(), "hmc2");
  EXPECT_EQ(s.link_preset(), "pcie4-x16");
  EXPECT_EQ(s.compute_preset(), "gpu-gtx580");
  ASSERT_EQ(s.ranks_size(), world_size);
  double longest = 0;
  for (int i = 0; i < world_size; ++i) {
    const proto::SimulatedRank& r = s.ranks(i);
    EXPECT_EQ(r.rank(), i);
    const double sum = r.compute_seconds() + r.transfer_seconds() + r.merge_seconds() + r.wait_seconds();
    EXPECT_GT(sum, 0) << "rank " << i << " never advanced its clock";
    longest = std::max(longest, sum);
  }
  // total_seconds is the makespan: the latest rank clock.
  EXPECT_NEAR(s.total_seconds(), longest, 1e-12 * world_size * 4);
  ASSERT_GT(report.curve_size(), 0);
  double previous = 0;
  for (const proto::CurvePoint& p : report.curve()) {
    EXPECT_GT(p.simulated_seconds(), previous) << "epoch " << p.epoch();
    previous = p.simulated_seconds();
  }
  EXPECT_LE(previous, s.total_seconds());
}

struct ModeCase {
  const char* label;
  std::string mode;
  int compute;
  int memory;
};
void PrintTo(const ModeCase& c, std::ostream* os) { *os << c.label; }

class TimingDeterminism : public ::testing::TestWithParam<ModeCase> {};

TEST_P(TimingDeterminism, ThreeRunsGiveTheSameModelAndTimeline) {
  const ModeCase c = GetParam();
  const CountingApp app(/*samples=*/480);
  const proto::Config config = TimedConfig(c.mode, c.memory, /*epochs=*/2, /*samples_per_clock=*/16);
  const int world = c.compute + c.memory;
  const LocalRun first = RunLocal(config, app, world);
  ExpectSimulatedSectionIsComplete(first.report(), world);
  EXPECT_EQ(first.report().model_checksum(), model::HexDigest(model::ModelChecksum(app.ExpectedModel(2))));
  const Timeline expected = TimelineOf(first.report());
  for (int run = 1; run < 3; ++run) {
    const Timeline again = TimelineOf(RunLocal(config, app, world).report());
    EXPECT_EQ(again.model_checksum, expected.model_checksum) << "run " << run;
    EXPECT_EQ(again.curve_simulated_seconds, expected.curve_simulated_seconds) << "run " << run;
    EXPECT_EQ(again.simulated, expected.simulated) << "run " << run << ": per-rank breakdown differs";
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, TimingDeterminism,
                         ::testing::Values(ModeCase{"ssp_3x1", "SSP", 3, 1},
                                           ModeCase{"ssp_2x2", "SSP", 2, 2},
                                           ModeCase{"direct_3x1", "DIRECT", 3, 1},
                                           ModeCase{"allreduce_3", "ALLREDUCE", 3, 0}),
                         [](const auto& info) { return std::string(info.param.label); });

// Float SGD on real data: the model bits depend on the merge order, so equal
// checksums show the interleaving repeats.
TEST(TimingDeterminismMf, SameModelBitsAndTimelineOnMovieLens) {
  const std::filesystem::path file = MovieLensFile();
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " not fetched; run: deploy/fetch-data.sh movielens";
  proto::Config config = TimedConfig("SSP", 1, /*epochs=*/2, /*samples_per_clock=*/1024);
  config.mutable_cluster()->set_slot_bytes(1 << 20);
  config.mutable_data()->set_name("movielens");
  const std::unique_ptr<apps::mf::MfApp> app = ValueOrThrow(apps::mf::LoadMfApp(config, file));
  const LocalRun first = RunLocal(config, *app, 4);
  ExpectSimulatedSectionIsComplete(first.report(), 4);
  const Timeline expected = TimelineOf(first.report());
  for (int run = 1; run < 3; ++run) {
    const Timeline again = TimelineOf(RunLocal(config, *app, 4).report());
    EXPECT_EQ(again.model_checksum, expected.model_checksum) << "run " << run;
    EXPECT_EQ(again.curve_simulated_seconds, expected.curve_simulated_seconds) << "run " << run;
    EXPECT_EQ(again.simulated, expected.simulated) << "run " << run;
  }
}

TEST(TimingStamps, NoBatchIsMergedBeforeItsVisibleTime) {
  const CountingApp app(/*samples=*/480);
  const proto::Config config = TimedConfig("SSP", 2, /*epochs=*/2, /*samples_per_clock=*/16);
  std::mutex mutex;
  int merged = 0;
  std::vector<std::string> early;
  runtime::RuntimeHooks hooks;
  hooks.before_timed_merge = [&](model::MemoryIndex m, transport::VirtualTime visible_at, transport::VirtualTime now) {
    std::lock_guard lock(mutex);
    ++merged;
    if (visible_at.time_since_epoch().count() <= 0 || now < visible_at) {
      early.push_back(fmt::format("memory {}: merged at {} ps, stamp {} ps", m.value, now.time_since_epoch().count(),
                                  visible_at.time_since_epoch().count()));
    }
  };
  RunLocal(config, app, 5, hooks);
  EXPECT_GT(merged, 0);
  EXPECT_TRUE(early.empty()) << early.size() << " batches merged early or unstamped, e.g. " << early.front();
}

TEST(TimingStraggler, IsChargedSlowdownTimesTheComputeInsteadOfSleeping) {
  const CountingApp app(/*samples=*/480);
  proto::Config config = TimedConfig("SSP", 1, /*epochs=*/2, /*samples_per_clock=*/16);
  config.mutable_training()->mutable_straggler()->set_rank(1);
  config.mutable_training()->mutable_straggler()->set_slowdown(4);
  const LocalRun run = RunLocal(config, app, 4);
  const proto::Simulated& s = run.report().simulated();
  ASSERT_EQ(s.ranks_size(), 4);
  // Compute ranks 0..2 do the same number of samples of the same work.
  const double normal = s.ranks(0).compute_seconds();
  ASSERT_GT(normal, 0);
  EXPECT_NEAR(s.ranks(1).compute_seconds() / normal, 4.0, 0.05);
  EXPECT_NEAR(s.ranks(2).compute_seconds() / normal, 1.0, 0.05);
}

}  // namespace
}  // namespace stalelearn::testing
