// The training-level tests' own test, as conformance_selftest.cc is the
// transport suite's: each case plants one defect (framework/core/planted_defect.h),
// runs the body of the test that guards against it (invariant_checks.h,
// snapshot_checks.h, lda_checks.h) with its failures captured, and expects that body to
// fail with its specific message. A case that passes here means the guarding
// test has gone blind to the defect it exists for.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "apps/lda/lda_planted_defects.h"
#include "apps/mf/mf_planted_defects.h"
#include "framework/core/planted_defect.h"
#include "tests/integration/checkpoint_checks.h"
#include "tests/integration/invariant_checks.h"
#include "tests/integration/lda_checks.h"
#include "tests/unit/runtime/liveness_checks.h"
#include "tests/unit/runtime/locality_checks.h"
#include "tests/unit/sync/merge_checks.h"
#include "tests/unit/sync/snapshot_checks.h"

namespace stalelearn::testing {
namespace {

struct PlantedCase {
  const char* label;
  PlantedDefect defect;
  const char* guarding_test;
  std::function<void()> body;  // the guarding test's body
  const char* expected_failure;
  bool needs_movielens = false;
};
void PrintTo(const PlantedCase& c, std::ostream* os) { *os << c.label; }

// Runs `body` with every gtest failure (any thread) captured instead of
// reported; an escaping exception counts as a failure too.
std::vector<std::string> CapturedFailures(const std::function<void()>& body) {
  ::testing::TestPartResultArray results;
  std::vector<std::string> failures;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &results);
    try {
      body();
    } catch (const std::exception& e) {
      failures.push_back(std::string("exception: ") + e.what());
    }
  }
  for (int i = 0; i < results.size(); ++i) {
    if (results.GetTestPartResult(i).failed()) failures.push_back(results.GetTestPartResult(i).message());
  }
  return failures;
}

const ModeCase kSsp1{"ssp1_3x1", "SSP", 1, 3, 1, proto::RANGE};

class PlantedDefects : public ::testing::TestWithParam<PlantedCase> {};

TEST_P(PlantedDefects, GuardingTestFailsWithItsSpecificMessage) {
  const PlantedCase& c = GetParam();
  if (c.needs_movielens && !FetchedMovieLens()) {
    GTEST_SKIP() << "MovieLens not fetched; run: deploy/fetch-data.sh movielens";
  }
  std::vector<std::string> failures;
  {
    ScopedPlantedDefect planted(c.defect);
    failures = CapturedFailures(c.body);
  }
  ASSERT_FALSE(failures.empty()) << c.guarding_test << " passed with the defect planted: it is blind to it";
  const auto caught = std::find_if(failures.begin(), failures.end(), [&](const std::string& message) {
    return message.find(c.expected_failure) != std::string::npos;
  });
  ASSERT_NE(caught, failures.end()) << c.guarding_test << " failed, but not with \"" << c.expected_failure
                                    << "\"; first failure:\n"
                                    << failures.front();
  std::string one_line = *caught;
  std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  std::cout << "  " << c.guarding_test << " caught it: " << one_line << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Defects, PlantedDefects,
    ::testing::Values(
        PlantedCase{"staleness_bound_off_by_one", PlantedDefect::kStalenessBoundOffByOne,
                    "BoundedStaleness.WithAStragglerNoRankRunsMoreThanSClocksAhead/1",
                    [] { CheckBoundedStalenessWithStraggler(1); }, kStaleReplicaMessage},
        PlantedCase{"delta_dropped", PlantedDefect::kDeltaDropped,
                    "ExactlyOnce.IntegerTableEndsAtExactlyThePushedTotal/ssp1_3x1",
                    [] { CheckExactlyOnce(kSsp1); }, kLostDeltaMessage},
        PlantedCase{"delta_merged_twice", PlantedDefect::kDeltaMergedTwice,
                    "ExactlyOnce.IntegerTableEndsAtExactlyThePushedTotal/ssp1_3x1",
                    [] { CheckExactlyOnce(kSsp1); }, kMergedTwiceMessage},
        PlantedCase{"resume_drops_shard_rows", PlantedDefect::kResumeDropsShardRows,
                    "ResumeIsExact.ResumedRunEndsAtExactlyThePushedTotal/ssp1_3x1",
                    [] { CheckResumeIsExact(kSsp1); }, kResumeNotExactMessage},
        PlantedCase{"picked_refresh_skips_last_record", PlantedDefect::kPickedRefreshSkipsLastRecord,
                    "BoundedStaleness.WithAStragglerNoRankRunsMoreThanSClocksAhead/1",
                    [] { CheckBoundedStalenessWithStraggler(1); }, kPartialRefreshMessage},
        PlantedCase{"last_table_policy_state_not_restored", PlantedDefect::kLastTablePolicyStateNotRestored,
                    "EveryPolicy/StatefulMergeResume.ResumedRunEndsWithTheModelOfTheRunWithoutCheckpoints/adam",
                    [] { CheckStatefulMergeResumeIsExact("adam", *FetchedMovieLens()); },
                    kMergeStateNotResumedMessage, /*needs_movielens=*/true},
        PlantedCase{"snapshot_half_written", PlantedDefect::kSnapshotHalfWritten,
                    "Snapshot.ConcurrentReaderSeesOnlyWholeGenerations",
                    [] { sync::testing::CheckConcurrentReaderSeesOnlyWholeGenerations(); },
                    "torn snapshots read"},
        PlantedCase{"factors_not_updated", apps::mf::kKernelSkipsFactors,
                    "MfConverges.FactorsBeatTheBiasesOnlyModel/ssp2_3x1",
                    [] { CheckMfBeatsBiasesOnly({"ssp2_3x1", "SSP", 2, 3, 1, proto::RANGE}, *FetchedMovieLens()); },
                    kFactorsIdleMessage, /*needs_movielens=*/true},
        PlantedCase{"item_factors_not_trained", apps::mf::kItemFactorsNotTrained,
                    "MfConverges.FactorsBeatTheBiasesOnlyModel/ssp2_3x1",
                    [] { CheckMfBeatsBiasesOnly({"ssp2_3x1", "SSP", 2, 3, 1, proto::RANGE}, *FetchedMovieLens()); },
                    kFactorsIdleMessage, /*needs_movielens=*/true},
        PlantedCase{"staleness_scaling_off", PlantedDefect::kStalenessScalingOff,
                    "StalenessAwarePolicy.DividesAStaleBatchByOnePlusItsEpochsOfStaleness",
                    [] { sync::testing::CheckStalenessAwareScalesStaleBatches(); },
                    sync::testing::kUnscaledStaleDeltaMessage},
        PlantedCase{"samples_per_clock_not_derived", PlantedDefect::kSamplesPerClockNotDerived,
                    "MfAtScale.SixtyFourComputeRanksConvergeWithTheDerivedSamplesPerClock",
                    [] { CheckMfConvergesAt64x8WithDerivedSamplesPerClock(*FetchedMovieLens()); },
                    kRankCountDivergedMessage, /*needs_movielens=*/true},
        PlantedCase{"lda_count_taken_back_wrong", apps::lda::kKernelTakesBackWrongCount,
                    "EveryMode/LdaInvariants.CountsMatchTheTokensAndTheAssignmentsAndNeverGoNegative/ssp2_3x1",
                    [] { CheckLdaCountsExact({"ssp2_3x1", "SSP", 2, 3, 1}); }, kLdaNegativeCountMessage},
        PlantedCase{"lda_plain_count_taken_back_wrong", apps::lda::kKernelTakesBackWrongCount,
                    "LdaPlainSampler.CountsMatchTheTokensAndTheAssignmentsAndNeverGoNegative",
                    [] { CheckLdaCountsExact({"ssp2_3x1_plain", "SSP", 2, 3, 1}, apps::lda::SamplerKind::kPlain); },
                    kLdaNegativeCountMessage},
        PlantedCase{"planner_ignores_scratchpad", PlantedDefect::kPlannerIgnoresScratchpad,
                    "LocalityPlan.EverySubBatchFitsTheScratchpad", [] { CheckPlannedSubBatchesFitTheScratchpad(); },
                    kSubBatchOverflowMessage},
        PlantedCase{"own_clocks_not_counted", PlantedDefect::kOwnClocksNotCounted,
                    "MergePolicyTraining.OneComputeRankReadsTheMastersVersionOfItsOwnClocks",
                    [] { CheckOwnClocksCountUnderAdam(); }, kRawOwnDeltasMessage},
        PlantedCase{"dead_rank_never_dropped", PlantedDefect::kDeadRankNeverDropped,
                    "DeadRankDetector.AStillHeartbeatIsDeadAfterTheLimitAndAMovingOneNever",
                    [] { runtime::CheckAStillHeartbeatIsDeadAndAMovingOneIsNot(); }, runtime::kStillHeartbeatMessage},
        PlantedCase{"stratum_not_rotated", PlantedDefect::kStratumNotRotated,
                    "LocalityPlan.StratifiedRanksNeverWriteTheSameRowInAClock",
                    [] { CheckStratifiedRanksWriteDisjointRows(); }, kSharedStripeMessage}),
    [](const ::testing::TestParamInfo<PlantedCase>& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace stalelearn::testing
