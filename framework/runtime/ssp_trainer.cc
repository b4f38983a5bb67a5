#include "framework/runtime/ssp_trainer.h"

namespace stalelearn::runtime {

SspTrainer::SspTrainer(const RankEnv& env, ComputeEndpoints endpoints, const DataPlaneGeometry& geometry,
                       sync::StalenessBound bound, EpochEvaluator* evaluator)
    : env_(env),
      me_(env.roles.compute_index(env.transport.rank())),
      links_(env, std::move(endpoints), geometry, /*keep_pending=*/true),
      gate_(links_.clocks, me_, bound, env.transport, env.wait),
      schedule_(env.app.TrainingSamples(), env.roles.compute_ranks(), me_.value,
                env.config.training().samples_per_clock(), env.config.seed()),
      straggler_(env.config.training().straggler().slowdown(), env.config.training().straggler().rank() == me_.value),
      evaluator_(evaluator),
      replica_(env.layout.tables()) {}

std::int64_t SspTrainer::ObservedStaleness(std::uint64_t clock, std::uint64_t min_merged_of_others) {
  // UINT64_MAX: no other compute rank, nothing can be stale.
  return clock > min_merged_of_others ? static_cast<std::int64_t>(clock - min_merged_of_others) : 0;
}

Result<ClockRecord> SspTrainer::GateAndRefresh(std::int64_t clock) {
  ClockRecord record;
  record.rank = me_;
  record.clock = clock;
  const auto t = static_cast<std::uint64_t>(clock);
  // SSP reads from its replica while it is fresh enough (Petuum's SSP cache):
  // a replica that already holds every other rank's clocks 0..t-s-1 serves
  // clock t without touching the network. Own updates are in it already (I2).
  // Unbounded (ASP) refreshes every clock, as nothing would ever force it to.
  if (installed_ && gate_.bound().bounded() && gate_.bound().Allows(t, installed_min_merged_)) {
    record.min_merged_of_others = installed_min_merged_;
    record.observed_staleness = ObservedStaleness(t, installed_min_merged_);
    return record;
  }
  sync::IdleBackoff backoff(env_.wait.backoff);
  std::chrono::nanoseconds stalled{0};
  while (true) {
    STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds waited, gate_.WaitUntilAllowed(t));
    stalled += waited;
    STALELEARN_ASSIGN_OR_RETURN(std::uint64_t min_merged, links_.refresher.Refresh(replica_.mutable_tables()));
    // The control block can run ahead of the snapshot we installed: the
    // installed model itself must satisfy the bound.
    installed_ = true;
    installed_min_merged_ = min_merged;
    if (gate_.bound().Allows(t, min_merged)) {
      record.min_merged_of_others = min_merged;
      break;
    }
    const auto idle_start = std::chrono::steady_clock::now();
    env_.transport.Progress();
    STALELEARN_RETURN_IF_ERROR(backoff.Idle());
    stalled += std::chrono::steady_clock::now() - idle_start;
  }
  record.observed_staleness = ObservedStaleness(t, record.min_merged_of_others);
  record.stall_seconds = std::chrono::duration<double>(stalled).count();
  return record;
}

Result<TrainerResult> SspTrainer::Run() {
  TrainerResult result;
  const int epochs = env_.config.training().epochs();
  const int eval_every = env_.config.training().eval_every_epochs();
  const std::int64_t clocks_per_epoch = schedule_.clocks_per_epoch();
  model::TableSet eval_model = model::MakeTableSet(env_.layout.tables());
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const std::vector<std::int64_t> order = schedule_.EpochOrder(epoch);
    for (std::int64_t k = 0; k < clocks_per_epoch; ++k) {
      const std::int64_t clock = epoch * clocks_per_epoch + k;
      STALELEARN_ASSIGN_OR_RETURN(ClockRecord record, GateAndRefresh(clock));
      if (env_.hooks.after_refresh) env_.hooks.after_refresh(record, replica_.tables());

      WorkCounters work;
      const auto compute_start = std::chrono::steady_clock::now();
      const std::span<const std::int64_t> samples = schedule_.ClockSamples(order, k);
      for (std::int64_t s : samples) env_.app.Update(s, replica_, work);
      straggler_.EndComputeStep(env_.cost_sink, work, std::chrono::steady_clock::now() - compute_start);
      result.samples += static_cast<std::int64_t>(samples.size());

      STALELEARN_ASSIGN_OR_RETURN(std::chrono::nanoseconds push_stall,
                                  links_.pusher.PushClock(replica_, static_cast<std::uint64_t>(clock)));
      record.stall_seconds += std::chrono::duration<double>(push_stall).count();
      result.Add(record);
    }
    const bool last = epoch + 1 == epochs;  // the final evaluation happens after all ranks finished
    if (evaluator_ != nullptr && !last && (epoch + 1) % eval_every == 0) {
      STALELEARN_RETURN_IF_ERROR(links_.refresher.ReadMergedModel(eval_model));
      evaluator_->Record(epoch + 1, eval_model);
    }
  }
  STALELEARN_RETURN_IF_ERROR(links_.pusher.Finish());
  return result;
}

}  // namespace stalelearn::runtime
