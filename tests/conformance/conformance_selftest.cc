// The conformance suite's own test: each case must fail on a transport with
// the defect it exists to catch (defective_transport.h). A case that passes
// here has gone blind.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <mutex>

#include "tests/conformance/conformance_harness.h"
#include "tests/conformance/defective_transport.h"

namespace stalelearn::conformance {
namespace {

// Counts failures instead of failing the test.
class CountingSink final : public CheckSink {
 public:
  void Fail(Rank rank, const std::string& message, const std::source_location&) override {
    std::lock_guard lock(mutex_);
    if (failures_.fetch_add(1) == 0) first_ = fmt::format("rank {}: {}", rank.value, message);
  }
  void Skip(Rank, const std::string&) override {}
  bool AnyFailure() const override { return failures_.load() > 0; }
  int failures() const { return failures_.load(); }
  std::string first() const {
    std::lock_guard lock(mutex_);
    return first_;
  }

 private:
  std::atomic<int> failures_{0};
  mutable std::mutex mutex_;
  std::string first_;
};

struct Blindspot {
  std::string_view defect;
  std::string_view case_name;
};
void PrintTo(const Blindspot& spot, std::ostream* out) { *out << spot.case_name << " on " << spot.defect; }

// This binary links the suite's parameterized test without a variant.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);

class ConformanceSelfTest : public ::testing::TestWithParam<Blindspot> {};

TEST_P(ConformanceSelfTest, CaseFailsOnTheDefectItGuardsAgainst) {
  const Blindspot& spot = GetParam();
  const ConformanceCase* test_case = nullptr;
  for (const ConformanceCase& c : ConformanceCases()) {
    if (c.name == spot.case_name) test_case = &c;
  }
  ASSERT_NE(test_case, nullptr) << spot.case_name;
  const BackendVariant variant{"defective", "defective", {{"defect", std::string(spot.defect)}},
                               RegisterDefectiveBackends, ThreadsLauncher(4)};
  CountingSink sink;
  try {
    RunCase({variant, *test_case}, sink);
  } catch (const std::exception&) {
    // A rank giving up because a peer failed is fine; the count decides.
  }
  EXPECT_GT(sink.failures(), 0) << spot.case_name << " passed on a transport that " << spot.defect;
  if (sink.failures() > 0) std::cout << "  caught: " << sink.first() << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Defects, ConformanceSelfTest,
    ::testing::Values(Blindspot{"truncates_large_puts", "PutGetIntegrity"},
                      Blindspot{"fence_does_not_order", "OrderingCommitWord"},
                      Blindspot{"flush_does_not_complete", "FlushCompletesEverything"},
                      Blindspot{"flush_does_not_complete", "OrderingCommitWord"},
                      Blindspot{"loses_atomic_adds", "AtomicContention"},
                      Blindspot{"everyone_wins_compare_swap", "CompareSwapElection"},
                      Blindspot{"ignores_access_rights", "AccessRights"},
                      Blindspot{"ignores_bounds", "ErrorsAreStatuses"}),
    [](const ::testing::TestParamInfo<Blindspot>& info) {
      return fmt::format("{}_{}", info.param.case_name, info.param.defect);
    });

}  // namespace
}  // namespace stalelearn::conformance
