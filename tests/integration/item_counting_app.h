// ItemCountingApp: the stratified tests' app (stratified_train_test.cc,
// loop_phases_test.cc). Samples are (user, item) pairs; the kernel counts
// both rows and checks, at every read in clock t, that the replica holds
// every increment any rank made in clocks <= t - kStaleness - 1 (I1) and
// all of its own (I2). Thread-safe as a kernel must be: the counters are
// atomics shared by every rank's kernel; one app per run.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "framework/core/error.h"
#include "framework/runtime/app_facets.h"
#include "framework/runtime/sample_schedule.h"
#include "tests/integration/train_support.h"

namespace stalelearn::testing {


constexpr std::int64_t kUsers = 60;
constexpr std::int64_t kItems = 400;
constexpr std::int64_t kSamples = 6000;
constexpr int kStaleness = 1;
constexpr int kMaxClocks = 4096;

// Samples are (user, item) pairs; the kernel counts both rows. Dealt by
// user: the samples are sorted by user and each user's are one group.
class ItemCountingApp final : public runtime::SampleKernelApp,
                              public runtime::HasLocalState,
                              public runtime::GroupsSamples {
 public:
  // `items`: more make a rank's held rows a smaller share of each stripe
  // (from about 3000 on, under half: its stripes are gathered, row_gather.h).
  explicit ItemCountingApp(bool deal_by_user = false, std::int64_t items = kItems)
      : items_(items),
        deal_by_user_(deal_by_user),
        increments_(static_cast<std::size_t>(kMaxClocks * items)),
        user_increments_(static_cast<std::size_t>(kMaxClocks * kUsers)) {
    std::uint64_t state = 21;
    for (std::int64_t s = 0; s < kSamples; ++s) {
      const auto u = static_cast<std::int64_t>(runtime::SplitMix64(state) % kUsers);
      const auto i = static_cast<std::int64_t>(runtime::SplitMix64(state) % static_cast<std::uint64_t>(items_));
      pairs_.emplace_back(u, i);
    }
    std::ranges::stable_sort(pairs_, {}, [](const auto& pair) { return pair.first; });
    for (std::int64_t s = 0; s < kSamples; ++s) {
      if (s == 0 || pairs_[static_cast<std::size_t>(s)].first != pairs_[static_cast<std::size_t>(s - 1)].first) {
        user_starts_.push_back(s);
      }
    }
    user_starts_.push_back(kSamples);
  }
  std::int64_t SampleGroups() const override {
    return deal_by_user_ ? std::ssize(user_starts_) - 1 : kSamples;
  }
  runtime::SampleRange GroupSamples(std::int64_t group) const override {
    if (!deal_by_user_) return {group, group + 1};
    return {user_starts_[static_cast<std::size_t>(group)], user_starts_[static_cast<std::size_t>(group + 1)]};
  }
  std::string name() const override { return "item-counting"; }
  std::string dataset() const override { return "synthetic"; }
  std::vector<runtime::TableSpec> Tables() const override {
    return {{"user", runtime::ElementType::kInt32, kUsers, 1}, {"item", runtime::ElementType::kInt32, items_, 1}};
  }
  // Rows start at a value of their table's (users 7, items 3), not 0, so a
  // row left at zeros instead of its first generation reads as missing
  // increments (ssp_mode.cc StartsFromInitialValues).
  static constexpr std::int32_t kInitial[2] = {7, 3};
  void InitRow(runtime::TableId table, runtime::RowId, runtime::RowValues values) const override {
    values.ints()[0] = kInitial[table.value];
  }
  std::int64_t TrainingSamples() const override { return kSamples; }
  void RowsOf(std::int64_t s, std::vector<runtime::RowRef>& rows) const override {
    rows.push_back({runtime::TableId{0}, runtime::RowId{pairs_[static_cast<std::size_t>(s)].first}});
    rows.push_back({runtime::TableId{1}, runtime::RowId{pairs_[static_cast<std::size_t>(s)].second}});
  }
  struct Own final : runtime::LocalState {
    explicit Own(std::int64_t items) : item_counts(static_cast<std::size_t>(items), 0) {}
    std::vector<std::int64_t> item_counts;
    std::vector<std::int64_t> user_counts = std::vector<std::int64_t>(kUsers, 0);
  };
  std::unique_ptr<runtime::LocalState> CreateLocalState(const runtime::RankInfo&,
                                                        std::span<const std::int64_t>) const override {
    return std::make_unique<Own>(items_);
  }
  Result<std::vector<std::byte>> SaveLocalState(const runtime::LocalState* state) const override {
    const auto& own = static_cast<const Own&>(*state);
    std::vector<std::byte> bytes(static_cast<std::size_t>(items_ + kUsers) * sizeof(std::int64_t));
    std::memcpy(bytes.data(), own.item_counts.data(), static_cast<std::size_t>(items_) * sizeof(std::int64_t));
    std::memcpy(bytes.data() + items_ * sizeof(std::int64_t), own.user_counts.data(), kUsers * sizeof(std::int64_t));
    return bytes;
  }
  Status RestoreLocalState(std::span<const std::byte> bytes, runtime::LocalState* state) const override {
    if (bytes.size() != static_cast<std::size_t>(items_ + kUsers) * sizeof(std::int64_t)) {
      return DataLoss("ItemCountingApp: state size");
    }
    auto& own = static_cast<Own&>(*state);
    std::memcpy(own.item_counts.data(), bytes.data(), static_cast<std::size_t>(items_) * sizeof(std::int64_t));
    std::memcpy(own.user_counts.data(), bytes.data() + items_ * sizeof(std::int64_t), kUsers * sizeof(std::int64_t));
    return Status::Ok();
  }
  void Update(std::int64_t s, runtime::ModelView& model, runtime::KernelContext& ctx) const override {
    const auto [user, item] = pairs_[static_cast<std::size_t>(s)];
    auto& own = static_cast<Own&>(*ctx.state);
    NoteLead(ctx.clock);
    // Every increment of clocks <= t - s - 1 (all ranks' kernels for them have
    // ended: SSP let this clock start), and every own one.
    CheckAndCount(model.IntRow(runtime::TableId{1}, runtime::RowId{item})[0], kInitial[1], increments_, items_, item,
                  own.item_counts, ctx.clock, stale_reads_);
    CheckAndCount(model.IntRow(runtime::TableId{0}, runtime::RowId{user})[0], kInitial[0], user_increments_, kUsers,
                  user, own.user_counts, ctx.clock, stale_user_reads_);
    ctx.work.random_row_accesses += 2;
  }
  runtime::Evaluation Evaluate(const runtime::TableSet& model) const override {
    double users = 0, items = 0;
    for (std::int64_t r = 0; r < kUsers; ++r) users += model[0].IntRow(r)[0] - kInitial[0];
    for (std::int64_t r = 0; r < items_; ++r) items += model[1].IntRow(r)[0] - kInitial[1];
    return {"items", items, {{"users", users}}};
  }
  int stale_reads() const { return stale_reads_.load(); }
  int stale_user_reads() const { return stale_user_reads_.load(); }
  int lost_own() const { return lost_own_.load(); }
  // The most clocks any rank's kernel had gone past another's clock when
  // that one ran.
  std::int64_t max_lead() const { return max_lead_.load(); }

 private:
  static void RaiseTo(std::atomic<std::int64_t>& at_least, std::int64_t value) {
    std::int64_t seen = at_least.load();
    while (value > seen && !at_least.compare_exchange_weak(seen, value)) {
    }
  }
  void NoteLead(std::int64_t clock) const {
    RaiseTo(furthest_clock_, clock);
    RaiseTo(max_lead_, furthest_clock_.load() - clock);
  }
  using Increments = std::vector<std::atomic<std::int64_t>>;
  static std::size_t Index(std::int64_t clock, std::int64_t row, std::int64_t rows) {
    if (clock >= kMaxClocks) throw Error(Internal("ItemCountingApp: clock beyond kMaxClocks"));
    return static_cast<std::size_t>(clock * rows + row);
  }
  // Checks `value` (row `row` of a table of `rows` rows starting at
  // `initial`, as clock `clock` reads it) against the bound and own
  // increments, then adds one.
  void CheckAndCount(std::int32_t& value, std::int32_t initial, Increments& increments, std::int64_t rows,
                     std::int64_t row, std::vector<std::int64_t>& own, std::int64_t clock,
                     std::atomic<int>& stale) const {
    const std::int64_t count = value - initial;
    std::int64_t required = 0;
    for (std::int64_t c = 0; c <= clock - kStaleness - 1; ++c) required += increments[Index(c, row, rows)].load();
    if (count < required) stale.fetch_add(1);
    if (count < own[static_cast<std::size_t>(row)]) lost_own_.fetch_add(1);
    value += 1;
    ++own[static_cast<std::size_t>(row)];
    increments[Index(clock, row, rows)].fetch_add(1);
  }
  std::int64_t items_;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs_;
  std::vector<std::int64_t> user_starts_;
  bool deal_by_user_;
  mutable Increments increments_;       // per (clock, item): increments made in that clock
  mutable Increments user_increments_;  // per (clock, user)
  mutable std::atomic<int> stale_reads_{0};
  mutable std::atomic<int> stale_user_reads_{0};
  mutable std::atomic<int> lost_own_{0};
  mutable std::atomic<std::int64_t> furthest_clock_{0};
  mutable std::atomic<std::int64_t> max_lead_{0};
};

// A rank 4x slower: the stripe it leaves is taken over while its last
// clocks are still unmerged.
inline void AddStraggler(proto::Config& config) {
  config.mutable_training()->mutable_straggler()->set_rank(1);
  config.mutable_training()->mutable_straggler()->set_slowdown(4);
}

// SSP with bound kStaleness, one memory rank, stratified scheduling.
inline proto::Config StratifiedConfig(int epochs, int samples_per_clock = 64) {
  proto::Config config = TestConfig("SSP", kStaleness, /*memory_ranks=*/1, epochs, samples_per_clock);
  config.mutable_training()->set_locality("stratified");
  return config;
}

}  // namespace stalelearn::testing
