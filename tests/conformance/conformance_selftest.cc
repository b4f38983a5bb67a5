// The conformance suite's own test: each case must fail on a transport with
// the defect it exists to catch (defective_transport.h), and fail with the
// check that guards against that defect (its message), not merely somehow.
// A case that passes here has gone blind.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <vector>

#include "tests/conformance/conformance_harness.h"
#include "tests/conformance/defective_transport.h"

namespace stalelearn::conformance {
namespace {

// Collects failures instead of failing the test.
class CollectingSink final : public CheckSink {
 public:
  void Fail(Rank rank, const std::string& message, const std::source_location&) override {
    std::lock_guard lock(mutex_);
    failures_.push_back(fmt::format("rank {}: {}", rank.value, message));
  }
  void Skip(Rank, const std::string&) override {}
  bool AnyFailure() const override {
    std::lock_guard lock(mutex_);
    return !failures_.empty();
  }
  std::vector<std::string> failures() const {
    std::lock_guard lock(mutex_);
    return failures_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> failures_;
};

struct Blindspot {
  std::string_view defect;
  std::string_view case_name;
  // Part of the failure message of the check that guards against the defect.
  std::string_view expected_failure;
};
void PrintTo(const Blindspot& spot, std::ostream* out) { *out << spot.case_name << " on " << spot.defect; }

// This binary links the suite's parameterized test without a variant.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);

class ConformanceSelfTest : public ::testing::TestWithParam<Blindspot> {};

TEST_P(ConformanceSelfTest, CaseFailsWithTheCheckThatGuardsTheDefect) {
  const Blindspot& spot = GetParam();
  const ConformanceCase* test_case = nullptr;
  for (const ConformanceCase& c : ConformanceCases()) {
    if (c.name == spot.case_name) test_case = &c;
  }
  ASSERT_NE(test_case, nullptr) << spot.case_name;
  const BackendVariant variant{"defective", "defective", {{"defect", std::string(spot.defect)}},
                               RegisterDefectiveBackends, ThreadsLauncher(4)};
  CollectingSink sink;
  std::string thrown;
  try {
    RunCase({variant, *test_case}, sink);
  } catch (const std::exception& e) {
    thrown = e.what();  // a rank giving up because a peer failed; the messages decide
  }
  const std::vector<std::string> failures = sink.failures();
  ASSERT_FALSE(failures.empty()) << spot.case_name << " passed on a transport that " << spot.defect
                                 << (thrown.empty() ? "" : " (a rank threw: " + thrown + ")");
  const auto caught = std::find_if(failures.begin(), failures.end(), [&](const std::string& message) {
    return message.find(spot.expected_failure) != std::string::npos;
  });
  EXPECT_NE(caught, failures.end()) << spot.case_name << " failed on " << spot.defect << ", but not with \""
                                    << spot.expected_failure << "\"; first failure: " << failures.front();
  if (caught != failures.end()) std::cout << "  caught: " << *caught << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Defects, ConformanceSelfTest,
    ::testing::Values(
        Blindspot{"truncates_large_puts", "PutGetIntegrity", "put of 65537 bytes at offset 0: byte 65536 is not what"},
        Blindspot{"fence_does_not_order", "OrderingCommitWord", ": commit word seen but payload byte"},
        Blindspot{"flush_does_not_complete", "FlushCompletesEverything", "incomplete at the target after flush"},
        Blindspot{"flush_does_not_complete", "OrderingCommitWord", ": commit word seen but payload byte"},
        Blindspot{"loses_atomic_adds", "AtomicContention", "sum of atomic adds"},
        Blindspot{"everyone_wins_compare_swap", "CompareSwapElection", "had 4 winners"},
        Blindspot{"ignores_access_rights", "AccessRights", "put to read-only: expected"},
        Blindspot{"ignores_bounds", "ErrorsAreStatuses", "put at the end: expected"},
        Blindspot{"duplicates_atomic_adds", "BarrierOverRma", "the count is"},
        Blindspot{"teardown_breaks_other_transports", "TeardownInAnyOrder", "put after teardown: "}),
    [](const ::testing::TestParamInfo<Blindspot>& info) {
      return fmt::format("{}_{}", info.param.case_name, info.param.defect);
    });

}  // namespace
}  // namespace stalelearn::conformance
