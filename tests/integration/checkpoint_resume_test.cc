// I8 under every merge policy, on a real model: MF on MovieLens resumed from
// a checkpoint ends with the uninterrupted run's model (checkpoint_checks.h),
// whether the memory side keeps state beside the rows (adagrad, adam) or not
// (sum, average). Skipped when MovieLens is not fetched.
#include <gtest/gtest.h>

#include <string>

#include "tests/integration/checkpoint_checks.h"
#include "tests/integration/invariant_checks.h"

namespace stalelearn::testing {
namespace {

class StatefulMergeResume : public ::testing::TestWithParam<const char*> {};

TEST_P(StatefulMergeResume, ResumedRunEndsWithTheUninterruptedModel) {
  const auto ratings = FetchedMovieLens();
  if (!ratings) GTEST_SKIP() << "MovieLens not fetched; run: deploy/fetch-data.sh movielens";
  CheckStatefulMergeResumeIsExact(GetParam(), *ratings);
}

INSTANTIATE_TEST_SUITE_P(EveryPolicy, StatefulMergeResume, ::testing::Values("sum", "average", "adagrad", "adam"),
                         [](const ::testing::TestParamInfo<const char*>& info) { return std::string(info.param); });

}  // namespace
}  // namespace stalelearn::testing
