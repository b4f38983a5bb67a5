#include "framework/runtime/direct_trainer.h"

#include <algorithm>

namespace stalelearn::runtime {

DirectTrainer::DirectTrainer(const RankEnv& env, ComputeEndpoints endpoints, const DataPlaneGeometry& geometry,
                             EpochEvaluator* evaluator)
    : env_(env),
      me_(env.roles.compute_index(env.transport.rank())),
      links_(env, std::move(endpoints), geometry, /*keep_pending=*/false),
      schedule_(env.app.TrainingSamples(), env.roles.compute_ranks(), me_.value,
                env.config.training().samples_per_clock(), env.config.seed()),
      straggler_(env.config.training().straggler().slowdown(), env.config.training().straggler().rank() == me_.value),
      evaluator_(evaluator),
      scratch_(env.layout.tables()) {
  for (std::size_t m = 0; m < links_.endpoints.published.size(); ++m) {
    readers_.push_back(std::make_unique<sync::SnapshotReader>(env.transport, *links_.endpoints.published[m],
                                                              geometry.published[m], env.wait));
  }
  reads_.resize(readers_.size());
}

Status DirectTrainer::FetchRows(std::span<const std::int64_t> samples) {
  rows_.clear();
  for (std::int64_t s : samples) env_.app.RowsOf(s, rows_);
  const auto key = [](const RowRef& r) { return std::pair(r.table.value, r.row.value); };
  std::ranges::sort(rows_, {}, key);
  rows_.erase(std::unique(rows_.begin(), rows_.end(), [&](const RowRef& a, const RowRef& b) { return key(a) == key(b); }),
              rows_.end());
  for (auto& r : reads_) r.clear();
  model::TableSet& scratch = scratch_.mutable_tables();
  for (const RowRef& r : rows_) {
    const int m = env_.layout.partition(r.table).Owner(r.row).value;
    reads_[m].push_back({env_.layout.RowOffset(r.table, r.row), scratch[r.table.value].RowBytes(r.row.value),
                         scratch[r.table.value].row_bytes()});
  }
  for (std::size_t m = 0; m < readers_.size(); ++m) {
    if (reads_[m].empty()) continue;
    STALELEARN_ASSIGN_OR_RETURN(std::uint64_t generation, readers_[m]->ReadRows(reads_[m]));
    (void)generation;
  }
  return Status::Ok();
}

Result<std::chrono::nanoseconds> DirectTrainer::WaitUntilMerged() {
  const auto start = std::chrono::steady_clock::now();
  sync::Deadline deadline(env_.wait.timeout);
  sync::IdleBackoff backoff(env_.wait.backoff);
  while (true) {
    STALELEARN_RETURN_IF_ERROR(links_.clocks.Refresh());
    bool merged = true;
    for (int m = 0; m < links_.clocks.memory_ranks(); ++m) {
      const model::MemoryIndex mi{m};
      merged &= links_.clocks.included(mi, me_) >= links_.pusher.last_sequence(mi);
    }
    if (merged) return std::chrono::steady_clock::now() - start;
    if (deadline.Expired()) return TimeoutError("DIRECT mode: memory ranks did not merge a mini-batch in time");
    env_.transport.Progress();
    STALELEARN_RETURN_IF_ERROR(backoff.Idle());
  }
}

Result<TrainerResult> DirectTrainer::Run() {
  TrainerResult result;
  const int epochs = env_.config.training().epochs();
  const int eval_every = env_.config.training().eval_every_epochs();
  const std::int64_t clocks_per_epoch = schedule_.clocks_per_epoch();
  model::TableSet eval_model = model::MakeTableSet(env_.layout.tables());
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const std::vector<std::int64_t> order = schedule_.EpochOrder(epoch);
    for (std::int64_t k = 0; k < clocks_per_epoch; ++k) {
      ClockRecord record;
      record.rank = me_;
      record.clock = epoch * clocks_per_epoch + k;
      const std::span<const std::int64_t> samples = schedule_.ClockSamples(order, k);
      STALELEARN_RETURN_IF_ERROR(FetchRows(samples));

      WorkCounters work;
      const auto compute_start = std::chrono::steady_clock::now();
      for (std::int64_t s : samples) env_.app.Update(s, scratch_, work);
      straggler_.EndComputeStep(env_.cost_sink, work, std::chrono::steady_clock::now() - compute_start);
      result.samples += static_cast<std::int64_t>(samples.size());

      STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds push_stall,
                                  links_.pusher.PushClock(scratch_, static_cast<std::uint64_t>(record.clock)));
      STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds merge_wait, WaitUntilMerged());
      record.stall_seconds = std::chrono::duration<double>(push_stall + merge_wait).count();
      // Others' clocks merged when this mini-batch's rows were read.
      const sync::ClockTable::Slowest slowest = links_.clocks.SlowestOther(me_);
      const auto t = static_cast<std::uint64_t>(record.clock);
      record.min_merged_of_others = slowest.merged_clock;
      record.observed_staleness = slowest.rank != me_ && t > slowest.merged_clock
                                      ? static_cast<std::int64_t>(t - slowest.merged_clock)
                                      : 0;
      result.Add(record);
    }
    const bool last = epoch + 1 == epochs;
    if (evaluator_ != nullptr && !last && (epoch + 1) % eval_every == 0) {
      STALELEARN_RETURN_IF_ERROR(links_.refresher.ReadMergedModel(eval_model));
      evaluator_->Record(epoch + 1, eval_model);
    }
  }
  STALELEARN_RETURN_IF_ERROR(links_.pusher.Finish());
  return result;
}

}  // namespace stalelearn::runtime
