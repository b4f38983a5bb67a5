// I8 under every merge policy, on a real model (checkpoint_checks.h): MF on
// MovieLens with checkpoints ends with the model of the run without them, and
// a run resumed from a checkpoint ends with that model too where the
// replicas were fresh at the cut (BSP), whether the memory side keeps state
// beside the rows (adagrad, adam) or not (sum, staleness_aware, average).
// Skipped when MovieLens is not fetched.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/checkpoint_checks.h"
#include "tests/integration/invariant_checks.h"

namespace stalelearn::testing {
namespace {

class StatefulMergeResume : public ::testing::TestWithParam<const char*> {};

TEST_P(StatefulMergeResume, CheckpointDoesNotChangeTheModel) {
  const auto ratings = FetchedMovieLens();
  if (!ratings) GTEST_SKIP() << "MovieLens not fetched; run: deploy/fetch-data.sh movielens";
  CheckCheckpointDoesNotChangeTheModel(GetParam(), *ratings);
}

TEST_P(StatefulMergeResume, ResumedRunEndsWithTheModelOfTheRunWithoutCheckpoints) {
  const auto ratings = FetchedMovieLens();
  if (!ratings) GTEST_SKIP() << "MovieLens not fetched; run: deploy/fetch-data.sh movielens";
  CheckStatefulMergeResumeIsExact(GetParam(), *ratings);
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, StatefulMergeResume,
                         ::testing::Values("sum", "staleness_aware", "average", "adagrad", "adam"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace stalelearn::testing
