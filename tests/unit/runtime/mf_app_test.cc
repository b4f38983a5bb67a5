// apps/mf: the biased SGD step, the initialisation and the RMSE evaluation
// against hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "apps/mf/mf_app.h"
#include "framework/model/model_checksum.h"
#include "framework/model/replica.h"
#include "framework/runtime/sample_schedule.h"

namespace stalelearn::apps::mf {
namespace {

using data::ItemIndex;
using data::Rating;
using data::UserIndex;

MfApp TinyApp(int rank = 2) {
  std::vector<Rating> train = {{UserIndex{0}, ItemIndex{1}, 4.0f, 0}, {UserIndex{1}, ItemIndex{0}, 2.0f, 0}};
  std::vector<Rating> test = {{UserIndex{0}, ItemIndex{0}, 3.0f, 0}, {UserIndex{1}, ItemIndex{1}, 5.0f, 0}};
  return MfApp("tiny", 2, 3, std::move(train), std::move(test), MfParams{rank, 0.1f, 0.05f, 0.1f, 11});
}

TEST(MfApp, TablesHoldFactorsAndBias) {
  const MfApp app = TinyApp(4);
  const auto tables = app.Tables();
  ASSERT_EQ(tables.size(), 2u);
  EXPECT_EQ(tables[0].rows, 2);
  EXPECT_EQ(tables[1].rows, 3);
  EXPECT_EQ(tables[0].width, 5);
  EXPECT_FLOAT_EQ(app.global_mean(), 3.0f);
  std::vector<runtime::RowRef> rows;
  app.RowsOf(0, rows);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].row.value, 0);
  EXPECT_EQ(rows[1].row.value, 1);
}

TEST(MfApp, InitialisationIsAPureFunctionOfTheRow) {
  const MfApp app = TinyApp(8);
  std::vector<float> a(9), b(9), c(9);
  app.InitRow(app.item_table().id, runtime::RowId{2}, runtime::RowValues(std::span(a)));
  app.InitRow(app.item_table().id, runtime::RowId{2}, runtime::RowValues(std::span(b)));
  app.InitRow(app.item_table().id, runtime::RowId{1}, runtime::RowValues(std::span(c)));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a[8], 0.0f) << "bias starts at zero";
  for (int f = 0; f < 8; ++f) EXPECT_LE(std::abs(a[f]), std::sqrt(3.0f) * 0.1f);
}

// A rank-2 replica with p_0 = (1, 2), b_u = 0.5 and q_1 = (0.5, -1), b_i = 0.25.
model::Replica ReplicaOfUserZeroAndItemOne(const MfApp& app) {
  model::Replica replica(app.Tables());
  auto& t = replica.mutable_tables();
  const float p[3] = {1, 2, 0.5f}, q[3] = {0.5f, -1, 0.25f};
  std::copy(p, p + 3, t[0].FloatRow(0).begin());
  std::copy(q, q + 3, t[1].FloatRow(1).begin());
  return replica;
}

TEST(MfApp, UpdateIsOneBiasedSgdStep) {
  const MfApp app = TinyApp(2);
  model::Replica replica = ReplicaOfUserZeroAndItemOne(app);
  auto& t = replica.mutable_tables();
  runtime::WorkCounters work;
  runtime::RandomStream random(1);
  runtime::KernelContext ctx{runtime::RankInfo{}, 0, 0, random, nullptr, work};
  app.Update(0, replica, ctx);  // rating 4 of user 0 on item 1
  const float prediction = 3.0f + 0.5f + 0.25f + (1 * 0.5f + 2 * -1.0f);  // 2.25
  const float e = 4.0f - prediction;
  const float lr = 0.1f, lambda = 0.05f;
  EXPECT_FLOAT_EQ(t[0].FloatRow(0)[2], 0.5f + lr * (e - lambda * 0.5f));
  EXPECT_FLOAT_EQ(t[1].FloatRow(1)[2], 0.25f + lr * (e - lambda * 0.25f));
  EXPECT_FLOAT_EQ(t[0].FloatRow(0)[0], 1 + lr * (e * 0.5f - lambda * 1));
  EXPECT_FLOAT_EQ(t[1].FloatRow(1)[1], -1 + lr * (e * 2 - lambda * -1));
  EXPECT_EQ(work.random_row_accesses, 2);
  EXPECT_GT(work.flops, 0);
  EXPECT_EQ(replica.touched_rows(), 2u);
}

// learning_rate_decay: epoch e steps by learning_rate / (1 + decay * e); the
// same bias step as above, taken at epoch 0 and at epoch 3 with decay 0.5.
TEST(MfApp, StepDecaysWithTheEpoch) {
  std::vector<Rating> train = {{UserIndex{0}, ItemIndex{1}, 4.0f, 0}, {UserIndex{1}, ItemIndex{0}, 2.0f, 0}};
  MfParams params{2, 0.1f, 0.05f, 0.1f, 11};
  params.learning_rate_decay = 0.5f;
  const MfApp app("tiny", 2, 3, train, {}, params);
  const auto bias_after_one_step = [&](int epoch) {
    model::Replica replica = ReplicaOfUserZeroAndItemOne(app);
    runtime::WorkCounters work;
    runtime::RandomStream random(1);
    runtime::KernelContext ctx{runtime::RankInfo{}, epoch, 0, random, nullptr, work};
    app.Update(0, replica, ctx);
    return replica.tables()[0].FloatRow(0)[2];
  };
  const float e = 4.0f - 2.25f, lambda = 0.05f;
  EXPECT_FLOAT_EQ(bias_after_one_step(0), 0.5f + 0.1f * (e - lambda * 0.5f));
  EXPECT_FLOAT_EQ(bias_after_one_step(3), 0.5f + 0.1f / (1 + 0.5f * 3) * (e - lambda * 0.5f));
}

TEST(MfApp, EvaluateIsClippedTestRmse) {
  const MfApp app = TinyApp(1);
  model::TableSet model = model::MakeTableSet(app.Tables());
  // User 1's bias pushes the prediction for (1, 1) to 3 + 4 = 7, clipped to 5.
  model[0].FloatRow(1)[1] = 4.0f;
  const runtime::Evaluation e = app.Evaluate(model);
  EXPECT_EQ(e.metric, "test_rmse");
  // Errors: (0,0): 3 - 3 = 0; (1,1): 5 - 5 = 0 after clipping.
  EXPECT_DOUBLE_EQ(e.value, 0.0);
  model[0].FloatRow(0)[1] = -1.0f;  // (0,0) predicts 2: error 1
  EXPECT_DOUBLE_EQ(app.Evaluate(model).value, std::sqrt(0.5));
}

// 40 users with 1-9 ratings each, interleaved (no user's ratings adjacent).
std::vector<Rating> InterleavedRatings() {
  std::vector<Rating> ratings;
  for (int round = 0; round < 9; ++round) {
    for (std::int64_t u = 0; u < 40; ++u) {
      if (round <= u % 9) ratings.push_back({UserIndex{static_cast<std::uint32_t>(u)}, ItemIndex{static_cast<std::uint32_t>((u * 7 + round) % 13)}, 3.0f, 0});
    }
  }
  return ratings;
}

// The users whose ratings each of 4 compute ranks trains on.
std::vector<std::vector<std::int64_t>> UsersPerRank(const MfApp& app, const std::vector<Rating>& train) {
  std::vector<std::vector<std::int64_t>> users;
  std::vector<runtime::RowRef> rows;
  std::int64_t dealt = 0;
  for (int c = 0; c < 4; ++c) {
    const runtime::SampleSchedule schedule(app, 4, c, 8, 5);
    std::set<std::int64_t> mine;
    for (const std::int64_t s : schedule.samples()) {
      rows.clear();
      app.RowsOf(s, rows);
      mine.insert(rows[0].row.value);
    }
    dealt += static_cast<std::int64_t>(schedule.samples().size());
    users.emplace_back(mine.begin(), mine.end());
  }
  EXPECT_EQ(dealt, static_cast<std::int64_t>(train.size())) << "every rating dealt once";
  return users;
}

TEST(MfApp, DealtByUserEveryUserTrainsOnOneRank) {
  const std::vector<Rating> train = InterleavedRatings();
  MfParams by_user{2, 0.1f, 0.05f, 0.1f, 11};
  by_user.deal_by_user = true;
  const MfApp app("tiny", 40, 13, train, {}, by_user);
  EXPECT_EQ(app.SampleGroups(), 40);
  std::size_t held = 0;
  std::set<std::int64_t> all;
  for (const auto& users : UsersPerRank(app, train)) {
    held += users.size();
    all.insert(users.begin(), users.end());
    EXPECT_GT(users.size(), 3u) << "users are dealt across the ranks";
  }
  EXPECT_EQ(all.size(), 40u);
  EXPECT_EQ(held, 40u) << "a user's ratings were split over ranks";

  // Dealt by rating (the default), users with several ratings land on several ranks.
  const MfApp by_rating("tiny", 40, 13, train, {}, MfParams{2, 0.1f, 0.05f, 0.1f, 11});
  std::size_t held_by_rating = 0;
  for (const auto& users : UsersPerRank(by_rating, train)) held_by_rating += users.size();
  EXPECT_GT(held_by_rating, 60u);
}

// Every rank (memory ranks too) takes the clocks of an epoch from
// ClocksPerEpochOf, which deals no samples; the compute ranks loop over
// their schedule's. They must agree, dealt by user (groups) or by rating,
// with and without strata, at every rank count.
TEST(MfApp, ClocksPerEpochWithoutDealingAgreeWithEveryRanksSchedule) {
  const std::vector<Rating> train = InterleavedRatings();
  for (const bool deal_by_user : {false, true}) {
    MfParams params{2, 0.1f, 0.05f, 0.1f, 11};
    params.deal_by_user = deal_by_user;
    const MfApp app("tiny", 40, 13, train, {}, params);
    for (const char* locality : {"grid", "stratified"}) {
      for (int ranks = 1; ranks <= 7; ++ranks) {
        proto::Config config;
        config.set_seed(5);
        config.mutable_training()->set_samples_per_clock(3);
        config.mutable_training()->set_locality(locality);
        const std::int64_t clocks = runtime::ClocksPerEpochOf(app, config, ranks);
        for (int c = 0; c < ranks; ++c) {
          EXPECT_EQ(runtime::ScheduleOf(app, config, ranks, c).clocks_per_epoch(), clocks)
              << "by user " << deal_by_user << ", " << locality << ", rank " << c << " of " << ranks;
        }
      }
    }
  }
}

// Evaluation in parts: the ranks form a grid of user parts x item parts
// (the divisor split that reads fewest rows a rank), each scores the test
// ratings of its cell and reads only its rows of both tables; the parts of
// any rank count add up to the whole model's RMSE, every rating once, and a
// part sees nothing beyond its rows.
TEST(MfApp, EvaluationPartsOfAGridAddUpToTheWholeRmse) {
  std::vector<Rating> test;
  for (std::uint32_t i = 0; i < 200; ++i) {
    test.push_back({UserIndex{(i * 7) % 11}, ItemIndex{(i * 13) % 29}, static_cast<float>(1 + i % 5), 0});
  }
  for (const bool more_users : {false, true}) {
    const std::size_t users = more_users ? 40 : 11, items = more_users ? 29 : 60;
    const MfApp app("tiny", users, items, {{UserIndex{0}, ItemIndex{0}, 3.0f, 0}}, test,
                    MfParams{3, 0.1f, 0.05f, 0.1f, 11});
    model::TableSet model = model::MakeTableSet(app.Tables());
    for (std::size_t t = 0; t < model.size(); ++t) {
      for (std::int64_t r = 0; r < model[t].rows(); ++r) {
        app.InitRow(runtime::TableId{static_cast<std::uint32_t>(t)}, runtime::RowId{r},
                    runtime::RowValues(model[t].FloatRow(r)));
        model[t].FloatRow(r)[3] = 0.1f * static_cast<float>(r % 7);  // biases, so the rows differ more
      }
    }
    const double whole = app.Evaluate(model).value;
    ASSERT_GT(whole, 0.5);
    for (const int ranks : {1, 2, 3, 4, 6, 12}) {
      const int p = app.UserParts(ranks);
      ASSERT_EQ(ranks % p, 0);
      // The grid reads no more rows a rank than any other divisor's.
      for (int d = 1; d <= ranks; ++d) {
        if (ranks % d != 0) continue;
        EXPECT_LE(static_cast<double>(users) / p + static_cast<double>(items) / (ranks / p),
                  static_cast<double>(users) / d + static_cast<double>(items) / (ranks / d) + 1e-9);
      }
      std::vector<double> sums(2, 0.0);
      for (int k = 0; k < ranks; ++k) {
        std::vector<model::RowRange> part;
        model::TableSet read = model;
        for (std::size_t t = 0; t < model.size(); ++t) {
          const runtime::TableId table{static_cast<std::uint32_t>(t)};
          part.push_back(app.PartRows(table, model[t].rows(), k, ranks));
          for (std::int64_t r = 0; r < read[t].rows(); ++r) {  // what the rank does not read
            if (r < part[t].first || r >= part[t].last) std::fill_n(read[t].FloatRow(r).begin(), 4, NAN);
          }
        }
        const std::vector<double> sum = app.EvaluatePart(
            read, runtime::EvalContext{runtime::RankInfo{model::ComputeIndex{k}, ranks, 11}, nullptr, part});
        ASSERT_EQ(sum.size(), 2u);
        sums[0] += sum[0];
        sums[1] += sum[1];
      }
      EXPECT_EQ(sums[1], 200.0) << ranks << " ranks: every test rating scored once";
      EXPECT_NEAR(app.CombineParts(sums).value, whole, 1e-12) << ranks << " ranks, more users " << more_users;
    }
  }
  // 64 ranks on the synthetic set's shape (200 k users, 1 M items): 4 x 16.
  const MfApp shaped("shape", 200000, 1000000, {{UserIndex{0}, ItemIndex{0}, 3.0f, 0}}, {}, MfParams{});
  EXPECT_EQ(shaped.UserParts(64), 4);
  EXPECT_EQ(shaped.UserParts(4), 1);
  EXPECT_EQ(shaped.UserParts(3), 1);
}

}  // namespace
}  // namespace stalelearn::apps::mf
