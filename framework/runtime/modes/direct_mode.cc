// DIRECT: no replica. Before a clock the rank reads exactly the rows its
// samples touch (and dense tables whole) from the memory ranks' published
// snapshots into a scratch model; after it, it pushes the deltas and waits
// until the memory ranks have merged them, so the next clock reads its own
// writes. The fine-grained, divergent remote access that StaleLearn's
// replicas remove: the baseline of its speedup claim.
#include <fmt/format.h>

#include <algorithm>

#include "framework/model/replica.h"
#include "framework/runtime/compute_links.h"
#include "framework/runtime/modes/builtin_modes.h"
#include "framework/runtime/working_set.h"
#include "framework/sync/snapshot.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::runtime::modes {
namespace {

class DirectConsistency final : public ConsistencyMode {
 public:
  explicit DirectConsistency(ModeContext& context)
      : env_(context.env),
        me_(context.me),
        links_(context.env, std::move(*context.endpoints), *context.geometry, /*keep_pending=*/false),
        scratch_(context.env.layout.tables(), WorkingSetOf(context.env, context.schedule)) {
    for (std::size_t m = 0; m < links_.endpoints.published.size(); ++m) {
      readers_.push_back(std::make_unique<sync::SnapshotReader>(
          env_.transport, *links_.endpoints.published[m], context.geometry->published[m], env_.wait));
    }
    reads_.resize(readers_.size());
  }

  model::ModelView& view() override { return scratch_; }

  Status ShareInitialization() override {
    STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds push_stall, links_.pusher.PushClock(scratch_, 0));
    (void)push_stall;
    STALELEARN_RETURN_IF_ERROR(WaitUntilMerged().status());
    // Every other rank's initialisation must be merged before clock 1 reads rows.
    return sync::WaitUntil(
               env_.wait, env_.transport,
               [&]() -> Result<bool> {
                 STALELEARN_RETURN_IF_ERROR(links_.clocks.Refresh());
                 return links_.clocks.SlowestOther(me_).merged_clock >= 1;
               },
               [&] { return fmt::format("every compute rank's initialisation (DIRECT, rank {})", me_.value); })
        .status();
  }

  Status BeforeClock(std::int64_t, std::span<const std::int64_t> samples, ClockRecord&) override {
    return FetchRows(samples);
  }

  Status AfterClock(std::int64_t clock, ClockRecord& record) override {
    STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds push_stall,
                                links_.pusher.PushClock(scratch_, static_cast<std::uint64_t>(clock)));
    STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds merge_wait, WaitUntilMerged());
    record.stall_seconds += std::chrono::duration<double>(push_stall + merge_wait).count();
    // Others' clocks merged when this clock's rows were read.
    const sync::ClockTable::Slowest slowest = links_.clocks.SlowestOther(me_);
    const auto t = static_cast<std::uint64_t>(clock);
    record.min_merged_of_others = slowest.merged_clock;
    record.observed_staleness =
        slowest.rank != me_ && t > slowest.merged_clock ? static_cast<std::int64_t>(t - slowest.merged_clock) : 0;
    return Status::Ok();
  }

  Status ReadModel(TableSet& model, ModelRows rows) override { return links_.refresher.ReadMergedRows(model, rows); }
  Status Finish(std::uint64_t total_clocks) override {
    total_clocks_ = total_clocks;
    return links_.pusher.Finish();
  }
  Status ReadFinalModel(TableSet& model, ModelRows rows) override {
    return links_.ReadFinalModel(env_, total_clocks_, model, rows);
  }
  Status Release() override { return links_.Release(); }

 private:
  void AddRow(const RowRef& r) {
    model::TableSet& scratch = scratch_.mutable_tables();
    const int m = env_.layout.partition(r.table).Owner(r.row).value;
    reads_[m].push_back({env_.layout.RowOffset(r.table, r.row),
                         scratch[r.table.value].RowBytes(scratch_.SlotOf(r.table, r.row)),
                         scratch[r.table.value].row_bytes()});
  }

  Status FetchRows(std::span<const std::int64_t> samples) {
    rows_.clear();
    for (std::int64_t s : samples) env_.app.RowsOf(s, rows_);
    const auto key = [](const RowRef& r) { return std::pair(r.table.value, r.row.value); };
    std::ranges::sort(rows_, {}, key);
    rows_.erase(std::unique(rows_.begin(), rows_.end(),
                            [&](const RowRef& a, const RowRef& b) { return key(a) == key(b); }),
                rows_.end());
    for (auto& r : reads_) r.clear();
    const std::vector<TableSpec>& tables = env_.layout.tables();
    for (const RowRef& r : rows_) {
      if (!tables[r.table.value].dense) AddRow(r);
    }
    for (std::size_t t = 0; t < tables.size(); ++t) {  // dense tables: always whole
      if (!tables[t].dense) continue;
      for (std::int64_t row = 0; row < tables[t].rows; ++row) AddRow({TableId{static_cast<std::uint32_t>(t)}, RowId{row}});
    }
    for (std::size_t m = 0; m < readers_.size(); ++m) {
      if (reads_[m].empty()) continue;
      STALELEARN_RETURN_IF_ERROR(readers_[m]->ReadRows(reads_[m]).status());
    }
    scratch_.Rebase();
    return Status::Ok();
  }

  Result<std::chrono::nanoseconds> WaitUntilMerged() {
    STALELEARN_RETURN_IF_ERROR(links_.pusher.Complete());  // DIRECT waits for the merge anyway
    return sync::WaitUntil(
        env_.wait, env_.transport,
        [&]() -> Result<bool> {
          STALELEARN_RETURN_IF_ERROR(links_.clocks.Refresh());
          for (int m = 0; m < links_.clocks.memory_ranks(); ++m) {
            const model::MemoryIndex mi{m};
            if (links_.clocks.included(mi, me_) < links_.pusher.last_sequence(mi)) return false;
          }
          return true;
        },
        [&] { return fmt::format("the memory ranks to merge compute rank {}'s clock (DIRECT)", me_.value); });
  }

  const RankEnv& env_;
  model::ComputeIndex me_;
  ComputeLinks links_;
  model::Replica scratch_;  // the working set; meaningful: the current clock's rows
  std::vector<std::unique_ptr<sync::SnapshotReader>> readers_;      // [m]
  std::vector<RowRef> rows_;
  std::vector<std::vector<sync::SnapshotReader::RowRead>> reads_;  // [m]
  std::uint64_t total_clocks_ = 0;
};

}  // namespace

ModeDefinition DirectMode() {
  ModeDefinition mode;
  mode.name = "DIRECT";
  mode.uses_memory_ranks = true;
  mode.reported_staleness = [](const proto::Config&) { return -1; };
  mode.create = [](ModeContext& context) -> Result<std::unique_ptr<ConsistencyMode>> {
    return std::unique_ptr<ConsistencyMode>(new DirectConsistency(context));
  };
  return mode;
}

}  // namespace stalelearn::runtime::modes
