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

proto::Config StatefulMergeConfig(std::string_view policy) {
  // 90,570 training ratings over 3 ranks, 1,536 a clock: 59 clocks.
  proto::Config config = TestConfig("SSP", 2, /*memory_ranks=*/1, /*epochs=*/1, /*samples_per_clock=*/512);
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

}  // namespace

void CheckStatefulMergeResumeIsExact(std::string_view policy, const fs::path& ratings) {
  const fs::path dir = fs::path(::testing::TempDir()) /
                       ("stalelearn_stateful_resume_" + std::string(policy) + "." + std::to_string(::getpid()));
  fs::remove_all(dir);
  proto::Config config = StatefulMergeConfig(policy);
  const std::unique_ptr<apps::mf::MfApp> app = ValueOrThrow(apps::mf::LoadMfApp(config, ratings));
  auto* checkpoint = config.mutable_training()->mutable_checkpoint();
  checkpoint->set_every_clocks(kEvery);
  checkpoint->set_keep(100);
  checkpoint->set_dir((dir / "all").string());
  const LocalRun uninterrupted = RunLocal(config, *app, 4);
  const std::string expected = uninterrupted.report().model_checksum();
  ASSERT_FALSE(expected.empty());
  if (policy != "sum") {
    const LocalRun summed = RunLocal(StatefulMergeConfig("sum"), *app, 4);
    EXPECT_NE(summed.report().model_checksum(), expected) << "merge policy " << policy << " changed nothing";
  }

  const fs::path only = dir / "only" / runtime::CheckpointDirFor("", kResumeAt);
  fs::create_directories(only.parent_path());
  fs::copy(runtime::CheckpointDirFor(dir / "all", kResumeAt), only, fs::copy_options::recursive);
  checkpoint->set_resume_dir((dir / "only").string());
  checkpoint->set_dir((dir / "only").string());
  const LocalRun resumed = RunLocal(config, *app, 4);
  EXPECT_EQ(resumed.report().resumed_from_clock(), static_cast<std::uint64_t>(kResumeAt));
  EXPECT_EQ(resumed.report().model_checksum(), expected) << kMergeStateNotResumedMessage << " (policy " << policy << ")";
  fs::remove_all(dir);
}

}  // namespace stalelearn::testing
