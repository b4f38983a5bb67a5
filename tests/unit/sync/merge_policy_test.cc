// Merge policies against the sequential reference (merge_reference.h) on the
// same random batches over many windows, plus the cases the formulas single
// out (average over 1, 2 and 3 contributors; Adam's per-row bias correction)
// and the errors of a bad spec.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "framework/core/error.h"
#include "framework/sync/batch_codec.h"
#include "framework/sync/merge_policy.h"
#include "framework/sync/shard_merger.h"
#include "tests/unit/sync/merge_checks.h"
#include "tests/unit/sync/merge_reference.h"

namespace stalelearn::sync {
namespace {

using model::MemoryIndex;
using model::RowId;
using model::TableId;
using testing::ReferenceMerge;

struct Scenario {
  std::string label;
  MergePolicySpec spec;
  std::int64_t rows;     // of the table (two shards, hashed; shard 1 is merged)
  std::int32_t width;
  int windows;
  int max_batches;       // per window, at least 1
  std::int64_t max_batch_rows;
  int threads;           // > 1 with batches over 2048 rows: the parallel merge
};

// CTest lists each case by its label, not by its bytes.
void PrintTo(const Scenario& s, std::ostream* os) { *os << s.label; }

// Runs random batches through a ShardMerger and the reference, window by
// window, comparing every row of the shard after each window.
class MergePolicyVsReference : public ::testing::TestWithParam<Scenario> {};

TEST_P(MergePolicyVsReference, MatchesTheSequentialReference) {
  const Scenario& s = GetParam();
  const MemoryIndex shard{1};
  const model::ModelLayout layout({{"w", model::ElementType::kFloat32, s.rows, s.width}}, 2,
                                  model::PartitionScheme::kHash);
  const model::RowPartition& partition = layout.partition(TableId{0});
  ShardMerger merger(layout, shard, s.threads, ValueOrThrow(CreateMergePolicies({s.spec}, layout, shard)));
  ReferenceMerge reference(s.spec, s.rows, s.width);
  // adagrad and adam follow the formulas to the bit too (GCC 12, x86-64); the
  // tolerance only forgives a compiler that contracts a multiply-add (FMA).
  const bool exact = s.spec.name == "sum" || s.spec.name == "average" || s.spec.name == "staleness_aware";

  std::mt19937_64 rng(20240611 + s.rows);
  std::vector<std::int64_t> owned;  // global rows of shard 1
  for (std::int64_t r = 0; r < s.rows; ++r) {
    if (partition.Owner(RowId{r}) == shard) owned.push_back(r);
  }
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::uint64_t sequence = 0;
  for (int w = 0; w < s.windows; ++w) {
    merger.BeginWindow();
    const int batches = std::uniform_int_distribution<int>(1, s.max_batches)(rng);
    for (int b = 0; b < batches; ++b) {
      // Fresh, half an epoch, one, one and a half, three and ten epochs stale.
      constexpr std::uint32_t kStaleness[] = {0, 512, 1024, 1536, 3072, 10240};
      const std::uint32_t stale = kStaleness[std::uniform_int_distribution<int>(0, 5)(rng)];
      std::shuffle(owned.begin(), owned.end(), rng);
      const auto rows = std::uniform_int_distribution<std::int64_t>(1, s.max_batch_rows)(rng);
      BatchEncoder encoder(layout.tables());
      std::vector<float> delta(s.width);
      for (std::int64_t k = 0; k < rows; ++k) {
        for (float& d : delta) d = value(rng);
        // Scale some rows up so large and small magnitudes mix.
        if (k % 7 == 0) {
          for (float& d : delta) d *= 100.0f;
        }
        encoder.Add(TableId{0}, RowId{owned[k]}, std::as_bytes(std::span(delta)));
        reference.Apply(owned[k], delta, stale);
      }
      const std::vector<std::byte> bytes = encoder.Seal(++sequence, /*clock=*/w, kEndOfClock, stale);
      Result<DecodedBatch> decoded = DecodeBatch(bytes, sequence, layout, shard);
      ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
      ASSERT_TRUE(merger.Merge(*decoded).ok());
    }
    merger.EndWindow();
    reference.EndWindow();

    int mismatches = 0;
    for (std::int64_t r : owned) {
      std::span<const float> row = merger.master()[0].FloatRow(partition.LocalIndex(RowId{r}));
      for (std::int32_t i = 0; i < s.width && mismatches < 5; ++i) {
        const float want = reference.value(r, i);
        const bool ok = exact ? row[i] == want : std::abs(row[i] - want) <= 1e-6f * std::max(1.0f, std::abs(want));
        if (!ok) {
          ++mismatches;
          ADD_FAILURE() << s.spec.name << ": window " << w << ", row " << r << "[" << i << "] = " << row[i]
                        << ", reference " << want;
        }
      }
    }
    ASSERT_EQ(mismatches, 0);
  }
}

// adam and adagrad with lr 0.05 (adagrad's accumulator from 0.1), resolved;
// the others have no parameters (and are left unresolved: unknown names too).
MergePolicySpec Spec(std::string name) {
  if (name == "adam") {
    AdamOptions adam;
    adam.set_learning_rate(0.05f);
    return BuiltinSpec(name, &adam);
  }
  if (name == "adagrad") {
    AdagradOptions adagrad;
    adagrad.set_learning_rate(0.05f);
    adagrad.set_initial_accumulator(0.1f);
    return BuiltinSpec(name, &adagrad);
  }
  return MergePolicySpec{.name = std::move(name)};
}

// adam as the runtime sets it up for 4 compute ranks: each batch's step is a
// quarter (a policy that ignored batches_per_clock would take the whole step).
MergePolicySpec AdamOfFourBatchesPerClock() {
  MergePolicySpec spec = Spec("adam");
  spec.batches_per_clock = 4;
  return spec;
}

INSTANTIATE_TEST_SUITE_P(
    Policies, MergePolicyVsReference,
    ::testing::Values(Scenario{"sum", Spec("sum"), 80, 5, 60, 4, 30, 1},
                      Scenario{"average", Spec("average"), 80, 5, 60, 4, 30, 1},
                      Scenario{"adagrad", Spec("adagrad"), 80, 5, 60, 4, 30, 1},
                      Scenario{"adam", Spec("adam"), 80, 5, 60, 4, 30, 1},
                      Scenario{"adam_four_batches_per_clock", AdamOfFourBatchesPerClock(), 80, 5, 60, 4, 30, 1},
                      Scenario{"staleness_aware", Spec("staleness_aware"), 80, 5, 60, 4, 30, 1},
                      Scenario{"sum_parallel", Spec("sum"), 12000, 3, 5, 3, 6000, 2},
                      Scenario{"average_parallel", Spec("average"), 12000, 3, 5, 3, 6000, 2},
                      Scenario{"adagrad_parallel", Spec("adagrad"), 12000, 3, 5, 3, 6000, 2},
                      Scenario{"adam_parallel", Spec("adam"), 12000, 3, 5, 3, 6000, 2},
                      Scenario{"staleness_aware_parallel", Spec("staleness_aware"), 12000, 3, 5, 3, 6000, 2}),
    [](const ::testing::TestParamInfo<Scenario>& info) { return info.param.label; });

TEST(StalenessAwarePolicy, DividesAStaleBatchByOnePlusItsEpochsOfStaleness) {
  testing::CheckStalenessAwareScalesStaleBatches();
}

// One shard, one float table of `width`; batches merged by hand.
class OneTable {
 public:
  OneTable(MergePolicySpec spec, std::int64_t rows = 8, std::int32_t width = 2)
      : layout_({{"w", model::ElementType::kFloat32, rows, width}}, 1, model::PartitionScheme::kRange),
        merger_(layout_, MemoryIndex{0}, 1, ValueOrThrow(CreateMergePolicies({spec}, layout_, MemoryIndex{0}))) {}

  // Merges one batch giving each row of `rows` the delta `deltas[k]` in every element.
  metrics::WorkCounters Merge(const std::vector<std::int64_t>& rows, const std::vector<float>& deltas) {
    BatchEncoder encoder(layout_.tables());
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const std::vector<float> delta(layout_.tables()[0].width, deltas[k]);
      encoder.Add(TableId{0}, RowId{rows[k]}, std::as_bytes(std::span(delta)));
    }
    const std::vector<std::byte> bytes = encoder.Seal(++sequence_, 0, kEndOfClock);
    return ValueOrThrow(merger_.Merge(ValueOrThrow(DecodeBatch(bytes, sequence_, layout_, MemoryIndex{0}))));
  }
  float At(std::int64_t row) const { return merger_.master()[0].FloatRow(row)[0]; }
  ShardMerger& merger() { return merger_; }

 private:
  model::ModelLayout layout_;
  ShardMerger merger_;
  std::uint64_t sequence_ = 0;
};

TEST(AveragePolicy, DividesEachRowByTheBatchesOfTheWindowThatNamedIt) {
  OneTable t(Spec("average"));
  t.merger().BeginWindow();
  t.Merge({0, 1, 2}, {3.0f, 1.0f, 2.0f});
  t.Merge({1, 2}, {5.0f, 4.0f});
  t.Merge({2}, {9.0f});
  EXPECT_EQ(t.At(2), 0.0f) << "average applied before the window closed";
  t.merger().EndWindow();
  EXPECT_EQ(t.At(0), 3.0f) << "one contributor: its delta unchanged";
  EXPECT_EQ(t.At(1), 3.0f) << "two contributors: (1 + 5) / 2";
  EXPECT_EQ(t.At(2), 5.0f) << "three contributors: (2 + 4 + 9) / 3";
  EXPECT_EQ(t.At(3), 0.0f) << "a row no batch named";

  // Counts start again in the next window; a batch outside a window is its own.
  t.Merge({2}, {1.0f});
  EXPECT_EQ(t.At(2), 6.0f);
  t.merger().BeginWindow();
  t.Merge({0}, {2.0f});
  t.Merge({0}, {4.0f});
  t.merger().EndWindow();
  EXPECT_EQ(t.At(0), 6.0f) << "3 + (2 + 4) / 2";
}

// A constant pseudo-gradient g makes every bias-corrected Adam step
// lr * g / (|g| + eps) from the first one on; uncorrected (or corrected with
// a step count that is not the row's own) the early steps differ by up to
// sqrt(1 - beta2) / (1 - beta1) = 3.2x with beta2 = 0.999.
TEST(AdamPolicy, BiasCorrectionUsesEachRowsOwnStepCount) {
  AdamOptions adam;
  adam.set_learning_rate(0.01f);
  adam.set_beta1(0.9f);
  adam.set_beta2(0.999f);
  adam.set_epsilon(1e-8f);
  OneTable t(BuiltinSpec("adam", &adam));
  const float delta = 0.5f;  // g = -0.5: every step adds lr
  const float step = adam.learning_rate() * delta / (delta + adam.epsilon());
  const auto near = [](float actual, float want) { return std::abs(actual - want) <= 1e-4f * std::abs(want); };

  t.Merge({0}, {delta});
  EXPECT_PRED2(near, t.At(0), step) << "step 1";
  for (int k = 2; k <= 99; ++k) t.Merge({0}, {delta});
  const float before = t.At(0);
  t.Merge({0, 1}, {delta, delta});  // row 0's step 100, row 1's step 1
  EXPECT_PRED2(near, t.At(0) - before, step) << "step 100";
  EXPECT_PRED2(near, t.At(0), 100 * step);
  EXPECT_PRED2(near, t.At(1), step) << "row 1's first step, in the 100th batch";
}

// Long runs of one row: past the step where both corrections have rounded
// to 1 (defaults), and past 65,536 steps with a beta2 so close to 1 that they
// never do.
TEST(AdamPolicy, LongRunsOfOneRowMatchTheReference) {
  AdamOptions slow_options;
  slow_options.set_learning_rate(0.05f);
  slow_options.set_beta2(0.9999999f);
  const MergePolicySpec slow = BuiltinSpec("adam", &slow_options);
  for (const auto& [spec, steps] : {std::pair{Spec("adam"), 5000}, std::pair{slow, 70000}}) {
    const model::TableSpec table{"w", model::ElementType::kFloat32, 1, 2};
    std::unique_ptr<MergePolicy> policy = ValueOrThrow(BuiltinMergePolicyRegistry().Create(spec, table, 1));
    model::RowBlock master(table.type, 1, 2);
    ReferenceMerge reference(spec, 1, 2);
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    for (int k = 0; k < steps; ++k) {
      const float delta[2] = {value(rng), 0.01f};
      policy->Apply(master, 0, reinterpret_cast<const std::byte*>(delta));
      reference.Apply(0, delta);
    }
    for (std::int32_t i = 0; i < 2; ++i) {
      EXPECT_NEAR(master.FloatRow(0)[i], reference.value(0, i), 1e-6f * std::max(1.0f, std::abs(reference.value(0, i))))
          << "beta2 " << OptionsOf<AdamOptions>(spec).beta2() << ", element " << i;
    }
  }
}

TEST(MergePolicySpec, EveryBadHyperparameterIsNamed) {
  EXPECT_TRUE(ValidateMergePolicySpec(MergePolicySpec{}).ok()) << "the defaults must be valid";
  // Each case changes one field of resolved (valid) options of adam, or of
  // adagrad for initial_accumulator.
  struct Bad {
    void (*mutate)(AdamOptions&, AdagradOptions&);
    std::string field;
  };
  const std::vector<Bad> cases = {
      {[](AdamOptions& a, AdagradOptions&) { a.set_learning_rate(-0.1f); }, "learning_rate"},
      {[](AdamOptions& a, AdagradOptions&) { a.set_learning_rate(0.0f); }, "learning_rate"},
      {[](AdamOptions& a, AdagradOptions&) { a.set_learning_rate(NAN); }, "learning_rate"},
      {[](AdamOptions& a, AdagradOptions&) { a.set_beta1(1.0f); }, "beta1"},
      {[](AdamOptions& a, AdagradOptions&) { a.set_beta1(-0.01f); }, "beta1"},
      {[](AdamOptions& a, AdagradOptions&) { a.set_beta2(1.5f); }, "beta2"},
      {[](AdamOptions& a, AdagradOptions&) { a.set_epsilon(0.0f); }, "epsilon"},
      {[](AdamOptions& a, AdagradOptions&) { a.set_epsilon(INFINITY); }, "epsilon"},
      {[](AdamOptions&, AdagradOptions& g) { g.set_initial_accumulator(-1.0f); }, "initial_accumulator"},
  };
  const std::vector<model::TableSpec> tables = {{"weights", model::ElementType::kFloat32, 4, 1}};
  for (const Bad& bad : cases) {
    AdamOptions adam = OptionsOf<AdamOptions>(Spec("adam"));
    AdagradOptions adagrad = OptionsOf<AdagradOptions>(Spec("adagrad"));
    bad.mutate(adam, adagrad);
    MergePolicySpec spec;
    if (bad.field == "initial_accumulator") {
      spec = {.name = "adagrad", .options = std::make_shared<AdagradOptions>(adagrad)};
    } else {
      spec = {.name = "adam", .options = std::make_shared<AdamOptions>(adam)};
    }
    const Status status = ValidateMergePolicies({spec}, tables, BuiltinMergePolicyRegistry());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad.field;
    EXPECT_NE(status.message().find("merge_policy." + bad.field), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("'weights'"), std::string::npos) << status.message();
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << "one line: " << status.message();
  }
}

TEST(MergePolicySpec, UnknownNameListsTheKnownOnes) {
  const std::vector<model::TableSpec> tables = {{"weights", model::ElementType::kFloat32, 4, 1}};
  const Status status = ValidateMergePolicies({Spec("adamw")}, tables, BuiltinMergePolicyRegistry());
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_NE(status.message().find("'adamw'"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("adagrad, adam, average, staleness_aware, sum"), std::string::npos) << status.message();
}

TEST(MergePolicySpec, Int32TablesMergeOnlyBySum) {
  const std::vector<model::TableSpec> tables = {{"counts", model::ElementType::kInt32, 4, 1}};
  EXPECT_TRUE(ValidateMergePolicies({Spec("sum")}, tables, BuiltinMergePolicyRegistry()).ok());
  for (const std::string name : {"average", "adagrad", "adam"}) {
    const Status status = ValidateMergePolicies({Spec(name)}, tables, BuiltinMergePolicyRegistry());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(status.message().find("'counts' is int32"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("'" + name + "'"), std::string::npos) << status.message();
  }
  const model::ModelLayout layout(tables, 1, model::PartitionScheme::kRange);
  // Unresolved: the built-in registry checks it (a resolved spec was checked
  // by its registry at config time).
  EXPECT_FALSE(CreateMergePolicies({MergePolicySpec{.name = "adam"}}, layout, MemoryIndex{0}).ok());
}

TEST(MergePolicySpec, OnePolicyPerTableOrNone) {
  const std::vector<model::TableSpec> tables = {{"a", model::ElementType::kFloat32, 4, 1},
                                                {"b", model::ElementType::kInt32, 4, 1}};
  EXPECT_TRUE(ValidateMergePolicies({}, tables, BuiltinMergePolicyRegistry()).ok());
  EXPECT_TRUE(ValidateMergePolicies({Spec("adam"), Spec("sum")}, tables, BuiltinMergePolicyRegistry()).ok());
  EXPECT_EQ(ValidateMergePolicies({Spec("adam")}, tables, BuiltinMergePolicyRegistry()).code(), StatusCode::kInvalidArgument);
  const Status status = ValidateMergePolicies({Spec("sum"), Spec("adam")}, tables, BuiltinMergePolicyRegistry());
  EXPECT_NE(status.message().find("'b'"), std::string::npos) << status.message();
}

TEST(MergePolicyRegistry, NamesAreUnique) {
  MergePolicyRegistry registry;
  ASSERT_TRUE(RegisterBuiltinMergePolicies(registry).ok());
  EXPECT_EQ(registry.names(), BuiltinMergePolicyRegistry().names());
  EXPECT_EQ(RegisterBuiltinMergePolicies(registry).code(), StatusCode::kInvalidArgument);
}

// What the timing backend charges: optimizer steps read and write the row's
// state once on top of what a sum does; sum holds no state at all.
TEST(MergePolicyWork, StepsCountTheirStateTraffic) {
  OneTable sum_table(Spec("sum"), 8, 20);
  EXPECT_EQ(sum_table.merger().policy_state_bytes(), 0u) << "sum tables must cost nothing";
  const metrics::WorkCounters sum = sum_table.merger().policy(TableId{0}).ApplyWork();
  EXPECT_EQ(sum.flops, 20);
  for (const std::string name : {"adagrad", "adam"}) {
    OneTable t(Spec(name), 8, 20);
    const MergePolicy& policy = t.merger().policy(TableId{0});
    const double state_per_row = static_cast<double>(policy.state_bytes()) / 8;
    EXPECT_GT(state_per_row, 0) << name;
    EXPECT_EQ(policy.ApplyWork().bytes - sum.bytes, 2 * state_per_row) << name;
    EXPECT_GT(policy.ApplyWork().flops, sum.flops) << name;
    EXPECT_GT(policy.ApplyWork().random_row_accesses, sum.random_row_accesses) << name;
    const metrics::WorkCounters merged = t.Merge({1, 4, 6}, {1.0f, 2.0f, 3.0f});
    EXPECT_EQ(merged.bytes, 3 * policy.ApplyWork().bytes) << name;
  }
  // average: the window's end is charged too.
  OneTable avg(Spec("average"), 8, 20);
  const metrics::WorkCounters apply = avg.merger().policy(TableId{0}).ApplyWork();
  const metrics::WorkCounters merged = avg.Merge({1, 4}, {1.0f, 2.0f});  // its own window
  EXPECT_GT(merged.flops, 2 * apply.flops) << "the window end's division and addition are not charged";
}

}  // namespace
}  // namespace stalelearn::sync
