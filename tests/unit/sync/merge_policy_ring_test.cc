// Merge policies behind the mailbox ring: a PollOnce pass is one merge window,
// snapshots publish master rows only (never optimizer state), and the sum
// path keeps integer totals exact (I4).
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tests/unit/sync/merge_reference.h"
#include "tests/unit/sync/ring_fixture.h"

namespace stalelearn::sync {
namespace {

using model::RowId;
using model::TableId;
using testing::ReferenceMerge;
using testing::RingFixture;

const std::vector<model::TableSpec> kFloatTable = {{"w", model::ElementType::kFloat32, 16, 3}};

MergePolicySpec Spec(std::string name) {
  MergePolicySpec spec;
  spec.name = std::move(name);
  return spec;
}

// A batch giving every row of `rows` the delta `deltas[k]` (all elements).
std::vector<std::byte> FloatBatch(RingFixture& f, const std::vector<std::int64_t>& rows,
                                  const std::vector<float>& deltas, std::uint64_t clock = 0) {
  BatchEncoder encoder(f.layout().tables());
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const std::vector<float> delta(f.layout().tables()[0].width, deltas[k]);
    encoder.Add(TableId{0}, RowId{rows[k]}, std::as_bytes(std::span(delta)));
  }
  return encoder.Seal(f.writer().next_sequence(), clock, kEndOfClock);
}

float MasterAt(RingFixture& f, std::int64_t row) { return f.merger().master()[0].FloatRow(row)[0]; }

TEST(MergePolicyRing, OnePollPassIsOneAverageWindow) {
  RingFixture f(/*slots=*/4, 1, kFloatTable, {Spec("average")});
  metrics::WorkCounters observed;
  f.poller().set_merge_observer([&](const metrics::WorkCounters& w) { observed += w; });
  ASSERT_TRUE(f.writer().Push(FloatBatch(f, {1, 2}, {1.0f, 8.0f}, 0)).ok());
  ASSERT_TRUE(f.writer().Push(FloatBatch(f, {1}, {2.0f}, 1)).ok());
  ASSERT_TRUE(f.writer().Push(FloatBatch(f, {1}, {6.0f}, 2)).ok());
  EXPECT_EQ(f.poller().PollOnce(), 3);
  EXPECT_EQ(MasterAt(f, 1), 3.0f) << "(1 + 2 + 6) / 3: the pass's three batches are one window";
  EXPECT_EQ(MasterAt(f, 2), 8.0f);
  ASSERT_TRUE(f.writer().Push(FloatBatch(f, {1}, {4.0f}, 3)).ok());
  EXPECT_EQ(f.poller().PollOnce(), 1);
  EXPECT_EQ(MasterAt(f, 1), 7.0f) << "a new pass is a new window";
  EXPECT_EQ(f.poller().counters().batches_merged, 4);
  // The observer is charged for the window ends as well as the batches.
  const metrics::WorkCounters per_row = f.merger().policy(TableId{0}).ApplyWork();
  EXPECT_GT(observed.flops, 5 * per_row.flops);
}

TEST(MergePolicyRing, RejectedBatchAddsNothingToTheWindow) {
  RingFixture f(/*slots=*/4, 1, kFloatTable, {Spec("average")});
  ASSERT_TRUE(f.writer().Push(FloatBatch(f, {1}, {2.0f})).ok());
  // Names row 1 twice: rejected whole, so the window's count for row 1 stays 1.
  BatchEncoder encoder(f.layout().tables());
  const std::vector<float> delta(3, 100.0f);
  encoder.Add(TableId{0}, RowId{1}, std::as_bytes(std::span(delta)));
  encoder.Add(TableId{0}, RowId{1}, std::as_bytes(std::span(delta)));
  ASSERT_TRUE(f.writer().Push(encoder.Seal(f.writer().next_sequence(), 0, kEndOfClock)).ok());
  EXPECT_EQ(f.poller().PollOnce(), 2);
  EXPECT_EQ(f.poller().counters().rejected_batches, 1);
  EXPECT_EQ(MasterAt(f, 1), 2.0f);
}

// A snapshot carries exactly the master rows the reference computes: no
// optimizer state in it, nor in its size.
TEST(MergePolicyRing, SnapshotsPublishMasterRowsOnly) {
  for (const std::string name : {"adagrad", "adam", "average"}) {
    AdagradOptions adagrad;
    adagrad.set_learning_rate(0.1f);
    adagrad.set_initial_accumulator(0.5f);  // state that is not zero, should it leak
    AdamOptions adam;
    adam.set_learning_rate(0.1f);
    const MergePolicySpec spec = name == "adagrad" ? BuiltinSpec(name, &adagrad)
                                 : name == "adam"  ? BuiltinSpec(name, &adam)
                                                   : Spec(name);
    RingFixture f(/*slots=*/4, 1, kFloatTable, {spec});
    EXPECT_GT(f.merger().policy_state_bytes(), 0u) << name;
    EXPECT_EQ(f.published_geometry().shard_bytes, f.layout().ShardBytes(model::MemoryIndex{0})) << name;
    ReferenceMerge reference(spec, 16, 3);
    SnapshotPublisher publisher(f.published_region(), f.published_geometry(), f.layout());
    for (int clock = 0; clock < 6; ++clock) {
      const std::vector<std::int64_t> rows = {clock % 16, (clock * 5 + 3) % 16};
      const std::vector<float> deltas = {0.25f * (clock + 1), -1.5f};
      ASSERT_TRUE(f.writer().Push(FloatBatch(f, rows, deltas, clock)).ok());
      for (std::size_t k = 0; k < rows.size(); ++k) reference.Apply(rows[k], std::vector<float>(3, deltas[k]));
      ASSERT_EQ(f.poller().PollOnce(), 1);
      reference.EndWindow();
    }
    publisher.Publish(f.merger().master(), f.poller());

    SnapshotReader reader(f.transport(), f.remote_published(), f.published_geometry(), WaitOptions{});
    std::vector<std::byte> shard(f.published_geometry().shard_bytes);
    ASSERT_TRUE(reader.ReadNewer(0, shard).ok());
    std::vector<float> published(shard.size() / sizeof(float));
    std::memcpy(published.data(), shard.data(), shard.size());
    for (std::int64_t r = 0; r < 16; ++r) {
      for (std::int32_t i = 0; i < 3; ++i) {
        EXPECT_NEAR(published[r * 3 + i], reference.value(r, i), 1e-6) << name << " row " << r;
      }
    }
  }
}

// The sum path through the ring: every row's int total equals the pushed
// total with wrap-around, exactly, whether sum is the default or named.
TEST(MergePolicyRing, SumKeepsIntTotalsExact) {
  for (const bool named : {false, true}) {
    const std::vector<model::TableSpec> ints = {{"counts", model::ElementType::kInt32, 16, 2}};
    RingFixture f(/*slots=*/4, 1, ints, named ? std::vector<MergePolicySpec>{Spec("sum")} : std::vector<MergePolicySpec>{});
    EXPECT_EQ(f.merger().policy(TableId{0}).name(), "sum");
    EXPECT_EQ(f.merger().policy_state_bytes(), 0u);
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(),
                                                    std::numeric_limits<std::int32_t>::max());
    std::vector<std::uint32_t> expected(16 * 2, 0);  // wraps like int32 should
    for (int n = 0; n < 40; ++n) {
      BatchEncoder encoder(f.layout().tables());
      for (std::int64_t r = n % 3; r < 16; r += 3) {
        const std::int32_t delta[2] = {any(rng), n % 5 == 0 ? std::numeric_limits<std::int32_t>::max() : 1};
        encoder.Add(TableId{0}, RowId{r}, std::as_bytes(std::span(delta)));
        for (int i = 0; i < 2; ++i) expected[r * 2 + i] += static_cast<std::uint32_t>(delta[i]);
      }
      ASSERT_TRUE(f.writer().Push(encoder.Seal(f.writer().next_sequence(), n, kEndOfClock)).ok());
      if (n % 3 == 0) f.poller().PollOnce();  // windows of one to several batches
    }
    while (f.poller().PollOnce() > 0) {
    }
    for (std::int64_t r = 0; r < 16; ++r) {
      for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(f.merger().master()[0].IntRow(r)[i], static_cast<std::int32_t>(expected[r * 2 + i]))
            << "row " << r << " element " << i << (named ? " (named sum)" : " (default)");
      }
    }
  }
}

}  // namespace
}  // namespace stalelearn::sync
