#include "tests/integration/checkpoint_checks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "apps/mf/mf_app.h"
#include "framework/core/error.h"
#include "framework/runtime/checkpoint_store.h"
#include "framework/sync/merge_policy_adagrad.pb.h"
#include "framework/sync/merge_policy_adam.pb.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kEvery = 20, kResumeAt = 40;

proto::Config StatefulMergeConfig(std::string_view policy, std::string_view mode, int compute_ranks,
                                  int memory_ranks) {
  // 90,570 training ratings, 1,536 a clock: 59 clocks at 3 compute ranks
  // (512 each), 177 at 1.
  proto::Config config = TestConfig(mode, mode == "BSP" ? 0 : 2, memory_ranks, /*epochs=*/1,
                                    /*samples_per_clock=*/1536 / compute_ranks);
  config.mutable_cluster()->set_slot_bytes(1 << 20);
  config.mutable_data()->set_name("movielens");
  proto::MergeConfig& merge = (*config.mutable_merge())["*"];
  merge.set_policy(std::string(policy));
  if (policy == "adam") {
    sync::AdamOptions adam;
    adam.set_learning_rate(0.002f);
    merge.mutable_params()->PackFrom(adam);
  } else if (policy == "adagrad") {
    sync::AdagradOptions adagrad;
    adagrad.set_learning_rate(0.002f);
    merge.mutable_params()->PackFrom(adagrad);
  }
  UseStaleLearnTiming(config);
  return config;
}

// Float merges done as master += scale x delta (MergePolicy::adds_delta):
// with one compute rank staleness_aware is sum.
bool AddsInline(std::string_view policy) { return policy == "sum" || policy == "staleness_aware"; }
constexpr double kInlineResumeTolerance = 1e-3;  // test RMSE

fs::path ScratchFor(std::string_view what, std::string_view policy) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       (std::string(what) + std::string(policy) + "." + std::to_string(::getpid()));
  fs::remove_all(dir);
  return dir;
}

}  // namespace

void CheckCheckpointDoesNotChangeTheModel(std::string_view policy, const fs::path& ratings) {
  const fs::path dir = ScratchFor("stalelearn_checkpoint_cut_", policy);
  proto::Config config = StatefulMergeConfig(policy, "SSP", 3, 1);
  // A straggler: the others run up to s clocks ahead, so their batches past
  // a checkpoint's clock come before its last one and the cut must fork.
  config.mutable_training()->mutable_straggler()->set_rank(2);
  config.mutable_training()->mutable_straggler()->set_slowdown(6);
  const std::unique_ptr<apps::mf::MfApp> app = ValueOrThrow(apps::mf::LoadMfApp(config, ratings));
  const LocalRun plain = RunLocal(config, *app, 4);
  auto* checkpoint = config.mutable_training()->mutable_checkpoint();
  checkpoint->set_every_clocks(kEvery);
  checkpoint->set_keep(100);
  checkpoint->set_dir(dir.string());
  const LocalRun checkpointed = RunLocal(config, *app, 4);
  ASSERT_FALSE(plain.report().model_checksum().empty());
  EXPECT_EQ(checkpointed.report().model_checksum(), plain.report().model_checksum())
      << kCheckpointChangedTheModelMessage << " (policy " << policy << ")";
  EXPECT_EQ(checkpointed.report().simulated().total_seconds(), plain.report().simulated().total_seconds())
      << kCheckpointChangedTheModelMessage << " (policy " << policy << ")";
  std::int64_t forks = 0;
  for (const proto::RankReport& r : checkpointed.report().ranks()) forks += r.checkpoint_forks();
  EXPECT_GT(forks, 0) << "no checkpoint was overtaken: the test did not exercise the cut's fork";
  for (int clock : {20, 40}) {
    EXPECT_TRUE(runtime::VerifyCheckpoint(runtime::CheckpointDirFor(dir, static_cast<std::uint64_t>(clock))).ok())
        << "checkpoint " << clock << " is missing or incomplete";
  }
  fs::remove_all(dir);
}

void CheckStatefulMergeResumeIsExact(std::string_view policy, const fs::path& ratings) {
  const fs::path dir = ScratchFor("stalelearn_stateful_resume_", policy);
  proto::Config config = StatefulMergeConfig(policy, "BSP", 1, 2);
  const std::unique_ptr<apps::mf::MfApp> app = ValueOrThrow(apps::mf::LoadMfApp(config, ratings));
  const LocalRun plain = RunLocal(config, *app, 3);
  const std::string expected = plain.report().model_checksum();
  ASSERT_FALSE(expected.empty());
  if (!AddsInline(policy)) {
    const LocalRun summed = RunLocal(StatefulMergeConfig("sum", "BSP", 1, 2), *app, 3);
    EXPECT_NE(summed.report().model_checksum(), expected) << "merge policy " << policy << " changed nothing";
  }
  auto* checkpoint = config.mutable_training()->mutable_checkpoint();
  checkpoint->set_every_clocks(kEvery);
  checkpoint->set_keep(100);
  checkpoint->set_dir((dir / "all").string());
  const LocalRun checkpointed = RunLocal(config, *app, 3);
  EXPECT_EQ(checkpointed.report().model_checksum(), expected) << kCheckpointChangedTheModelMessage;

  const fs::path only = dir / "only" / runtime::CheckpointDirFor("", kResumeAt);
  fs::create_directories(only.parent_path());
  fs::copy(runtime::CheckpointDirFor(dir / "all", kResumeAt), only, fs::copy_options::recursive);
  checkpoint->set_resume_dir((dir / "only").string());
  checkpoint->set_dir((dir / "only").string());
  const LocalRun resumed = RunLocal(config, *app, 3);
  EXPECT_EQ(resumed.report().resumed_from_clock(), static_cast<std::uint64_t>(kResumeAt));
  if (AddsInline(policy)) {
    // The replica keeps the rows only its rank changed as it computed them,
    // which may differ from the master's sum in the last bit; a resumed
    // replica starts from the master's: near, not to the bit.
    EXPECT_NEAR(resumed.report().final().value(), plain.report().final().value(), kInlineResumeTolerance)
        << kMergeStateNotResumedMessage << " (policy " << policy << ")";
  } else {
    EXPECT_EQ(resumed.report().model_checksum(), expected)
        << kMergeStateNotResumedMessage << " (policy " << policy << ")";
  }
  fs::remove_all(dir);
}

}  // namespace stalelearn::testing
