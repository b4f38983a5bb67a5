// Which tables only one compute rank writes (runtime/tables_written_alone.h):
// the deal it assumes is the one SampleSchedule makes, each row's namer is
// what a brute-force pass over every rank's samples finds, and a table is
// written alone exactly when none of the rank's rows is named elsewhere.
// A wrong answer would let a refresh skip other ranks' changes (I1).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "framework/runtime/app_facets.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/tables_written_alone.h"
#include "framework/runtime/working_set.h"

namespace stalelearn::testing {
namespace {

// (user, item) samples sorted by user; dealt by user, each user's samples
// are one group, else each sample is its own.
class UserItemApp final : public runtime::App, public runtime::GroupsSamples {
 public:
  UserItemApp(bool deal_by_user, std::int64_t users = 50, std::int64_t items = 300, std::int64_t samples = 4000)
      : deal_by_user_(deal_by_user), users_(users), items_(items) {
    std::uint64_t state = 5;
    for (std::int64_t s = 0; s < samples; ++s) {
      const auto u = static_cast<std::int64_t>(runtime::SplitMix64(state) % static_cast<std::uint64_t>(users));
      const auto i = static_cast<std::int64_t>(runtime::SplitMix64(state) % static_cast<std::uint64_t>(items));
      pairs_.emplace_back(u, i);
    }
    std::ranges::sort(pairs_);
    for (std::int64_t s = 0; s < samples; ++s) {
      if (s == 0 || pairs_[static_cast<std::size_t>(s)].first != pairs_[static_cast<std::size_t>(s - 1)].first) {
        starts_.push_back(s);
      }
    }
    starts_.push_back(samples);
  }
  std::string name() const override { return "user-item"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override {
    return {{"user", runtime::ElementType::kFloat32, users_, 2}, {"item", runtime::ElementType::kFloat32, items_, 2}};
  }
  std::int64_t TrainingSamples() const override { return std::ssize(pairs_); }
  void RowsOf(std::int64_t s, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({runtime::TableId{0}, runtime::RowId{pairs_[static_cast<std::size_t>(s)].first}});
    rows.push_back({runtime::TableId{1}, runtime::RowId{pairs_[static_cast<std::size_t>(s)].second}});
  }
  void UpdateBatch(std::span<const std::int64_t>, runtime::ModelView&, runtime::KernelContext&) const override {}
  std::int64_t SampleGroups() const override { return deal_by_user_ ? std::ssize(starts_) - 1 : TrainingSamples(); }
  runtime::SampleRange GroupSamples(std::int64_t g) const override {
    if (!deal_by_user_) return {g, g + 1};
    return {starts_[static_cast<std::size_t>(g)], starts_[static_cast<std::size_t>(g + 1)]};
  }

 private:
  bool deal_by_user_;
  std::int64_t users_, items_;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs_;
  std::vector<std::int64_t> starts_;
};

constexpr std::uint64_t kSeed = 17;

TEST(TablesWrittenAlone, DealtRanksAreTheSchedulesDeal) {
  for (const bool by_user : {false, true}) {
    const UserItemApp app(by_user);
    constexpr int kRanks = 3;
    const std::vector<std::uint16_t> rank_of = runtime::DealtRanks(app, kRanks, kSeed);
    ASSERT_EQ(std::ssize(rank_of), app.TrainingSamples());
    std::int64_t dealt = 0;
    for (int c = 0; c < kRanks; ++c) {
      const runtime::SampleSchedule schedule(app, kRanks, c, 64, kSeed);
      for (const std::int64_t s : schedule.samples()) {
        ASSERT_EQ(rank_of[static_cast<std::size_t>(s)], c) << "sample " << s << (by_user ? ", by user" : "");
      }
      dealt += schedule.share();
    }
    EXPECT_EQ(dealt, app.TrainingSamples());
  }
}

TEST(TablesWrittenAlone, EachRowsNamerIsTheOneRankWhoseSamplesNameIt) {
  const UserItemApp app(/*deal_by_user=*/false);
  constexpr int kRanks = 4;
  const runtime::WrittenAloneHandle namers = runtime::FindRowNamers(app, kRanks, kSeed);
  const std::vector<std::uint16_t> rank_of = runtime::DealtRanks(app, kRanks, kSeed);
  std::vector<std::vector<std::set<int>>> named(2);
  named[0].resize(50);
  named[1].resize(300);
  std::vector<runtime::RowRef> rows;
  for (std::int64_t s = 0; s < app.TrainingSamples(); ++s) {
    rows.clear();
    app.RowsOf(s, rows);
    for (const runtime::RowRef& r : rows) named[r.table.value][static_cast<std::size_t>(r.row.value)].insert(rank_of[static_cast<std::size_t>(s)]);
  }
  for (std::size_t t = 0; t < 2; ++t) {
    for (std::size_t r = 0; r < named[t].size(); ++r) {
      const std::set<int>& by = named[t][r];
      const std::int32_t want = by.empty()      ? runtime::RowNamers::kNamedByNone
                                : by.size() > 1 ? runtime::RowNamers::kNamedBySeveral
                                                : *by.begin();
      ASSERT_EQ(namers->by_table[t][r], want) << "table " << t << ", row " << r;
    }
  }
  // The ranks of one run share one pass while a handle lives.
  EXPECT_EQ(runtime::FindRowNamers(app, kRanks, kSeed).get(), namers.get());
}

std::vector<bool> AloneFor(const runtime::App& app, int ranks, int me) {
  const runtime::SampleSchedule schedule(app, ranks, me, 64, kSeed);
  const model::Replica replica(app.Tables(), runtime::FindWorkingSet(app, schedule.ascending(), false));
  const runtime::WrittenAloneHandle namers = runtime::FindRowNamers(app, ranks, kSeed);
  return runtime::TablesWrittenAlone(*namers, ranks, model::ComputeIndex{me}, replica);
}

TEST(TablesWrittenAlone, UsersDealtWholeAreWrittenAloneSharedItemsAreNot) {
  const UserItemApp by_user(/*deal_by_user=*/true);
  const UserItemApp by_sample(/*deal_by_user=*/false);
  for (int me = 0; me < 3; ++me) {
    EXPECT_EQ(AloneFor(by_user, 3, me), (std::vector<bool>{true, false})) << "rank " << me;
    EXPECT_EQ(AloneFor(by_sample, 3, me), (std::vector<bool>{false, false})) << "rank " << me;
  }
  EXPECT_EQ(AloneFor(by_sample, 1, 0), (std::vector<bool>{true, true})) << "one compute rank writes everything alone";
  // A full replica holds rows other ranks name: never alone.
  const model::Replica whole(by_user.Tables());
  EXPECT_EQ(runtime::TablesWrittenAlone(*runtime::FindRowNamers(by_user, 3, kSeed), 3, model::ComputeIndex{0}, whole),
            (std::vector<bool>{false, false}));
}

}  // namespace
}  // namespace stalelearn::testing
