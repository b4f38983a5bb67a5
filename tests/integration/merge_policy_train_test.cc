// Memory-side merge policies end to end: the config's `merge` map chooses the
// policy of a float table, the memory rank applies it, and the trained model
// equals the sequential reference (tests/unit/sync/merge_reference.h) fed the
// same deltas in the same merge order. What makes the order and the windows
// known:
//   - one merge window: merging is paused (RuntimeHooks::merging_paused)
//     until every compute rank has started its last clock, so every earlier
//     clock's batch waits in the rings (ASP: nobody waits for merges) and
//     the first pass takes them all, ring by ring (rank 0's clocks in order,
//     then rank 1's...). The last clock writes nothing.
//   - one compute rank, unpaused, BSP/SSP: its batches merge in clock order;
//     adagrad and adam do not depend on windows.
// The deltas are small integers. With one compute rank under adagrad or adam
// the replica is refreshed with merged (non-integer) values (own clocks count
// toward the bound there), so a delta is (x + k) - x in float: the non-exact
// policies' tolerance covers it.
// Also: bad merge entries fail TrainRank with kInvalidArgument naming them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "backends/builtin.h"
#include "framework/core/error.h"
#include "framework/runtime/merge_config.h"
#include "framework/sync/merge_policy_adagrad.pb.h"
#include "framework/sync/merge_policy_adam.pb.h"
#include "framework/transport/inprocess_bootstrap.h"
#include "tests/integration/app_api_support.h"
#include "tests/integration/invariant_checks.h"
#include "tests/integration/train_support.h"
#include "tests/unit/sync/merge_reference.h"

namespace stalelearn::testing {
namespace {

using runtime::RowId;
using runtime::TableId;

constexpr std::int64_t kRows = 4;
constexpr std::int32_t kWidth = 2;

float InitialValue(std::int64_t row, std::int32_t i) { return static_cast<float>(10 + 3 * row + i); }

using ClockDeltas = std::map<std::int64_t, std::vector<float>>;  // row -> delta

// Sample s adds 1 + (s + i) mod 3 to element i of row s mod kRows, except in
// the last clock, which writes nothing and marks the rank as arrived there.
class DeltaApp final : public runtime::SampleKernelApp {
 public:
  DeltaApp(std::int64_t samples, std::int64_t last_clock) : samples_(samples), last_clock_(last_clock) {}

  std::string name() const override { return "deltas"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override { return tables_.specs(); }
  void InitRow(TableId, RowId row, runtime::RowValues row_values) const override {
    const std::span<float> values = row_values.floats();
    for (std::int32_t i = 0; i < kWidth; ++i) values[static_cast<std::size_t>(i)] = InitialValue(row.value, i);
  }
  std::int64_t TrainingSamples() const override { return samples_; }
  void RowsOf(std::int64_t sample, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({weights_.id, RowId{sample % kRows}});
  }
  void Update(std::int64_t sample, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    const int rank = ctx.info.rank.value;
    if (ctx.clock == last_clock_) {
      std::lock_guard lock(mutex_);
      arrived_.insert(rank);
      return;
    }
    const std::span<float> row = model.Row(weights_, RowId{sample % kRows});
    std::lock_guard lock(mutex_);
    std::vector<float>& delta = deltas_[{rank, ctx.clock}][sample % kRows];
    delta.resize(kWidth, 0.0f);
    for (std::int32_t i = 0; i < kWidth; ++i) {
      const auto add = static_cast<float>(1 + (sample + i) % 3);
      row[static_cast<std::size_t>(i)] += add;
      delta[static_cast<std::size_t>(i)] += add;
    }
  }
  // The sum of the weights, each element as an extra metric "w<row>_<i>".
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    runtime::Evaluation e{"sum", 0};
    for (std::int64_t r = 0; r < kRows; ++r) {
      for (std::int32_t i = 0; i < kWidth; ++i) {
        const float x = runtime::Row(model, weights_, r)[static_cast<std::size_t>(i)];
        e.value += x;
        e.extra.emplace_back(fmt::format("w{}_{}", r, i), x);
      }
    }
    return e;
  }

  int arrived() const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(arrived_.size());
  }
  // Every (rank, clock)'s row deltas, ordered by rank, then clock.
  std::map<std::pair<int, std::int64_t>, ClockDeltas> deltas() const {
    std::lock_guard lock(mutex_);
    return deltas_;
  }

 private:
  runtime::TableList tables_;
  runtime::FloatTable weights_ = tables_.AddFloat("w", kRows, kWidth);  // the one table
  std::int64_t samples_;
  std::int64_t last_clock_;
  mutable std::mutex mutex_;
  mutable std::set<int> arrived_;
  mutable std::map<std::pair<int, std::int64_t>, ClockDeltas> deltas_;
};

struct MergeCase {
  const char* label;
  const char* policy;
  const char* mode;
  int compute;
  int memory;
  bool one_window;  // pause merging until every batch but the last clock's is in the rings
};
void PrintTo(const MergeCase& c, std::ostream* os) { *os << c.label; }

// The policy's options (adam, adagrad; none for the others), resolved.
sync::MergePolicySpec SpecFor(const std::string& policy) {
  if (policy == "adam") {
    sync::AdamOptions adam;
    adam.set_learning_rate(0.05f);
    adam.set_beta1(0.8f);
    adam.set_beta2(0.95f);
    adam.set_epsilon(1e-3f);
    return sync::BuiltinSpec(policy, &adam);
  }
  if (policy == "adagrad") {
    sync::AdagradOptions adagrad;
    adagrad.set_learning_rate(0.05f);
    adagrad.set_epsilon(1e-3f);
    adagrad.set_initial_accumulator(0.1f);
    return sync::BuiltinSpec(policy, &adagrad);
  }
  return sync::BuiltinSpec(policy);
}

class MergePolicyTraining : public ::testing::TestWithParam<MergeCase> {};

TEST_P(MergePolicyTraining, TrainedModelEqualsTheSequentialReference) {
  const MergeCase& c = GetParam();
  constexpr std::int64_t kClocks = 5, kPerClock = 6;
  const DeltaApp app(c.compute * kClocks * kPerClock, /*last_clock=*/kClocks - 1);
  proto::Config config = TestConfig(c.mode, 1, c.memory, /*epochs=*/1, kPerClock);
  config.mutable_cluster()->set_ring_slots(kClocks + 2);  // every clock fits while merging is paused
  const sync::MergePolicySpec spec = SpecFor(c.policy);
  proto::MergeConfig& merge = (*config.mutable_merge())["*"];
  merge.set_policy(spec.name);
  if (spec.options != nullptr) merge.mutable_params()->PackFrom(*spec.options);
  runtime::RuntimeHooks hooks;
  if (c.one_window) hooks.merging_paused = [&](model::MemoryIndex) { return app.arrived() < c.compute; };
  const LocalRun run = RunLocal(config, app, c.compute + c.memory, hooks);

  sync::MergePolicySpec reference_spec = spec;
  reference_spec.batches_per_clock = c.compute;  // the runtime's: one batch per compute rank and clock
  sync::testing::ReferenceMerge reference(reference_spec, kRows, kWidth);
  for (std::int64_t r = 0; r < kRows; ++r) {
    for (std::int32_t i = 0; i < kWidth; ++i) reference.set_value(r, i, InitialValue(r, i));
  }
  const auto deltas = app.deltas();
  ASSERT_EQ(static_cast<std::int64_t>(deltas.size()), c.compute * (kClocks - 1));
  for (const auto& [at, rows] : deltas) {
    for (const auto& [row, delta] : rows) reference.Apply(row, delta);
    if (!c.one_window) reference.EndWindow();  // one rank: one batch per window at most matters for average only
  }
  reference.EndWindow();

  // adagrad and adam: the tolerance of merge_policy_test (a compiler may contract a multiply-add).
  const bool exact = spec.name == "sum" || spec.name == "average";
  const auto& metrics = run.report().final().metrics();
  double sum_of_deltas = 0;  // what plain summing would have added
  for (const auto& [at, rows] : deltas) {
    for (const auto& [row, delta] : rows) sum_of_deltas += delta[0] + delta[1];
  }
  double initial = 0;
  for (std::int64_t r = 0; r < kRows; ++r) {
    for (std::int32_t i = 0; i < kWidth; ++i) {
      const float want = reference.value(r, i);
      const auto got = static_cast<float>(metrics.at(fmt::format("w{}_{}", r, i)));
      initial += InitialValue(r, i);
      if (exact) {
        EXPECT_EQ(got, want) << c.policy << ": row " << r << "[" << i << "]";
      } else {
        EXPECT_NEAR(got, want, 1e-6f * std::max(1.0f, std::abs(want))) << c.policy << ": row " << r << "[" << i << "]";
      }
    }
  }
  if (spec.name != "sum") {
    EXPECT_NE(run.report().final().value(), initial + sum_of_deltas) << "the memory rank summed instead";
  }
}

// I1 at one compute rank under adam (invariant_checks.h; planted defect
// kOwnClocksNotCounted, the SNN 1:1 defect of issue 26).
TEST(MergePolicyTraining, OneComputeRankReadsTheMastersVersionOfItsOwnClocks) { CheckOwnClocksCountUnderAdam(); }
TEST(MergePolicyTraining, OneComputeRankWaitsAtTheGateForItsOwnMergedClocks) { CheckOwnClocksBlockTheGate(); }

INSTANTIATE_TEST_SUITE_P(
    Policies, MergePolicyTraining,
    ::testing::Values(MergeCase{"sum_asp_2x1_window", "sum", "ASP", 2, 1, true},
                      MergeCase{"average_asp_2x1_window", "average", "ASP", 2, 1, true},
                      MergeCase{"average_asp_3x2_window", "average", "ASP", 3, 2, true},
                      MergeCase{"adagrad_asp_2x1_window", "adagrad", "ASP", 2, 1, true},
                      MergeCase{"adam_asp_2x2_window", "adam", "ASP", 2, 2, true},
                      MergeCase{"adagrad_bsp_1x1", "adagrad", "BSP", 1, 1, false},
                      MergeCase{"adam_ssp_1x2", "adam", "SSP", 1, 2, false}),
    [](const auto& info) { return std::string(info.param.label); });

// ---- bad merge entries ----

// Every rank's TrainRank status (they all fail before any collective).
std::vector<Status> TrainStatuses(const proto::Config& config, const runtime::App& app, int world_size) {
  const runtime::TrainInputs inputs{config, app, backends::BuiltinRegistry(), BuiltinModes()};
  std::vector<Status> statuses(static_cast<std::size_t>(world_size));
  std::mutex mutex;
  transport::RunRanks(world_size, [&](transport::Bootstrap& bootstrap) {
    Result<runtime::RankRun> run = runtime::TrainRank(inputs, bootstrap);
    std::lock_guard lock(mutex);
    statuses[static_cast<std::size_t>(bootstrap.rank().value)] = run.status();
  });
  return statuses;
}

TEST(MergeConfigThroughTrainRank, BadEntriesAreInvalidArgumentsNamingTheField) {
  const DeltaApp app(24, /*last_clock=*/-2);
  const struct {
    const char* mode;
    const char* key;
    const char* policy;
    float beta1;
    std::vector<std::string> named;  // in the message
  } cases[] = {
      {"SSP", "nosuch", "sum", 0, {"merge.nosuch", "'nosuch'"}},
      {"SSP", "*", "bogus", 0, {"merge", "bogus"}},
      {"SSP", "w", "adam", 1.5f, {"merge.w.adam.beta1", "[0, 1)"}},
      {"ALLREDUCE", "w", "average", 0, {"merge.w.policy=average", "memory ranks"}},
  };
  for (const auto& bad : cases) {
    proto::Config config = TestConfig(bad.mode, 1, 1, 1, 8);
    proto::MergeConfig& merge = (*config.mutable_merge())[bad.key];
    merge.set_policy(bad.policy);
    if (bad.beta1 != 0) {
      sync::AdamOptions adam;
      adam.set_beta1(bad.beta1);
      merge.mutable_params()->PackFrom(adam);
    }
    const std::string label = fmt::format("{} merge.{}.policy={}", bad.mode, bad.key, bad.policy);
    for (const Status& status : TrainStatuses(config, app, 2)) {
      EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << label << ": " << status.ToString();
      for (const std::string& part : bad.named) {
        EXPECT_NE(status.message().find(part), std::string::npos) << label << ": " << status.message();
      }
      EXPECT_EQ(status.message().find('\n'), std::string::npos) << label << ": one line: " << status.message();
    }
  }
}

// Zero fields of a merge entry's options take the policy's declared defaults
// (those of a spec built in code), a named table wins over "*", and tables
// named nowhere sum.
TEST(MergeConfigThroughTrainRank, ZeroFieldsTakeTheSpecDefaultsAndANamedTableWinsOverTheDefaultEntry) {
  const std::vector<model::TableSpec> tables = {{"a", runtime::ElementType::kFloat32, 2, 1},
                                                {"b", runtime::ElementType::kFloat32, 2, 1},
                                                {"c", runtime::ElementType::kInt32, 2, 1}};
  proto::Config config = TestConfig("SSP", 1, 1, 1, 8);
  (*config.mutable_merge())["*"].set_policy("adam");
  (*config.mutable_merge())["b"].set_policy("adagrad");
  sync::AdagradOptions adagrad;
  adagrad.set_learning_rate(0.5f);
  (*config.mutable_merge())["b"].mutable_params()->PackFrom(adagrad);
  (*config.mutable_merge())["c"].set_policy("sum");
  const std::vector<sync::MergePolicySpec> specs =
      ValueOrThrow(runtime::MergeSpecsOf(config, tables, true, sync::BuiltinMergePolicyRegistry()));
  ASSERT_EQ(specs.size(), 3u);
  const sync::AdamOptions& adam_defaults = sync::OptionsOf<sync::AdamOptions>(sync::BuiltinSpec("adam"));
  EXPECT_EQ(specs[0].name, "adam");
  const sync::AdamOptions& adam = sync::OptionsOf<sync::AdamOptions>(specs[0]);
  EXPECT_EQ(adam.learning_rate(), adam_defaults.learning_rate());
  EXPECT_EQ(adam.beta1(), 0.9f);
  EXPECT_EQ(adam.beta2(), 0.99f);
  EXPECT_EQ(adam.epsilon(), 1e-3f);
  EXPECT_EQ(specs[1].name, "adagrad");
  const sync::AdagradOptions& adagrad_resolved = sync::OptionsOf<sync::AdagradOptions>(specs[1]);
  EXPECT_EQ(adagrad_resolved.learning_rate(), 0.5f);
  EXPECT_EQ(adagrad_resolved.epsilon(), 1e-3f);
  EXPECT_EQ(adagrad_resolved.initial_accumulator(), 0.0f);
  EXPECT_EQ(specs[2].name, "sum");
}

}  // namespace
}  // namespace stalelearn::testing
