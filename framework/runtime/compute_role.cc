// A compute rank's run (run_lifecycle.h): the clock loop under the
// configured mode, wrapped for the run's extras (a checkpointed run's
// parts, surviving dead ranks), the epoch evaluations and early stopping, and
// its part of the report.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "framework/model/hash64.h"
#include "framework/model/model_checksum.h"
#include "framework/runtime/clock_loop.h"
#include "framework/runtime/app_facets.h"
#include "framework/runtime/early_stopping.h"
#include "framework/runtime/epoch_evaluator.h"
#include "framework/runtime/eval_parts_exchange.h"
#include "framework/runtime/peer_liveness.h"
#include "framework/runtime/run_lifecycle.h"
#include "framework/runtime/run_report.h"
#include "framework/runtime/checkpointing_mode.h"

namespace stalelearn::runtime {
namespace {

// The lowest compute index not in `dead`: the rank that reports the final
// model (compute rank 0 unless it died).
int LowestLiveCompute(const std::vector<model::ComputeIndex>& dead) {
  int c = 0;
  while (std::ranges::find(dead, model::ComputeIndex{c}) != dead.end()) ++c;
  return c;
}

class ComputeRole {
 public:
  ComputeRole(RunLifecycle& lifecycle, const DataPlaneGeometry* geometry)
      : lifecycle_(lifecycle),
        env_(lifecycle.env()),
        checkpointer_(lifecycle.checkpointer()),
        geometry_(geometry),
        me_(env_.roles.compute_index(lifecycle.me())),
        info_{me_, env_.roles.compute_ranks(), env_.config.seed()} {}

  Result<RankRun> Run() {
    std::optional<ComputeEndpoints> endpoints;
    if (geometry_ != nullptr) {
      STALELEARN_ASSIGN_OR_RETURN(endpoints, lifecycle_.ConnectCompute());
      // The regions are owned by the mode's links from here on; their addresses stay.
      for (const auto& r : endpoints->rings) rings_.push_back(r.get());
      for (const auto& p : endpoints->published) published_.push_back(p.get());
    }
    STALELEARN_RETURN_IF_ERROR(lifecycle_.Start());
    start_ = std::chrono::steady_clock::now();
    // One deal for the mode (its working set) and the loop (its clocks and plan).
    schedule_.emplace(ScheduleOf(env_.app, env_.config, info_.compute_ranks, me_.value));
    STALELEARN_ASSIGN_OR_RETURN(mode_, MakeMode(endpoints));
    ClockLoop loop(env_, info_, *mode_, *schedule_);
    if (checkpointing_ != nullptr) STALELEARN_RETURN_IF_ERROR(PrepareCheckpointing(loop));
    // The whole model is evaluated on compute rank 0 (a survivor takes over
    // the final evaluation if it died: TakeOverIfRankZeroDies); parts on
    // every compute rank.
    const bool evaluates = env_.facets.evaluates_in_parts() || me_.value == 0;
    if (evaluates) {
      StartEvaluating(loop, /*prints=*/me_.value == 0);
      loop.set_evaluator(&*evaluator_);
      if (!evaluator_->in_parts()) {
        early_.emplace(env_.config.training().early_stopping());
        early_->set_keep_best_model(checkpointer_.writes_checkpoints());
        loop.set_early_stopping(&*early_);
      } else if (env_.config.training().early_stopping().patience() > 0) {
        // In parts: compute rank 0 decides on the parts every rank sends it
        // (eval_parts_exchange.h); without early stopping nothing is sent.
        parts_.emplace(env_.bootstrap, env_.roles.compute_rank(model::ComputeIndex{0}), me_,
                       env_.roles.compute_ranks(), *env_.facets.parts);
        if (parts_->decides()) {
          early_.emplace(env_.config.training().early_stopping());
          early_->set_keep_best_model(checkpointer_.writes_checkpoints());
          parts_->set_early_stopping(&*early_);
        }
        loop.set_parts_exchange(&*parts_);
      }
    }
    STALELEARN_ASSIGN_OR_RETURN(TrainerResult result, loop.Run());
    STALELEARN_RETURN_IF_ERROR(loop.early_stopping_error());
    heartbeat_.reset();  // released: the memory ranks watch this rank no more
    lifecycle_.LeaveSchedule();  // after the final read and release: they are part of the timeline
    if (aware_ != nullptr) STALELEARN_RETURN_IF_ERROR(lifecycle_.ExcludeDead(aware_->dead()));
    if (lifecycle_.WritesStopCheckpoint()) {
      const std::int64_t samples = checkpointing_ != nullptr ? checkpointing_->samples_done() : result.samples;
      STALELEARN_RETURN_IF_ERROR(checkpointer_.WriteComputeState(*lifecycle_.StoppedClock(), me_, loop.local_state(),
                                                                 samples, /*cut=*/false));
    }
    STALELEARN_RETURN_IF_ERROR(lifecycle_.EndTraining());
    proto::Report partial;
    STALELEARN_RETURN_IF_ERROR(Report(loop, result, partial));
    *partial.add_ranks() = MakeRankReport(lifecycle_.me(), Role::kCompute, &result, nullptr,
                                          lifecycle_.transport_counters());
    return lifecycle_.Gather(std::move(partial), std::move(result.records));
  }

 private:
  // The configured mode; in a checkpointed run inside the checkpointing
  // wrapper, and when the run survives deaths inside the dead-rank-aware one.
  Result<std::unique_ptr<ConsistencyMode>> MakeMode(std::optional<ComputeEndpoints>& endpoints) {
    ModeContext context{env_, me_, *schedule_, endpoints ? &*endpoints : nullptr, geometry_};
    STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<ConsistencyMode> mode, lifecycle_.mode().create(context));
    if (checkpointer_.checkpointed()) {
      auto wrapped = std::make_unique<CheckpointingMode>(lifecycle_, me_, std::move(mode));
      checkpointing_ = wrapped.get();
      mode = std::move(wrapped);
    }
    if (!lifecycle_.survives_deaths()) return mode;
    auto wrapped = std::make_unique<DeadRankAwareMode>(env_, std::move(mode), published_, geometry_->published[0],
                                                       [this](std::int64_t clock) { checkpointer_.MaybeKill(clock); });
    aware_ = wrapped.get();
    if (!env_.facets.evaluates_in_parts() && me_.value != 0) TakeOverIfRankZeroDies();
    heartbeat_.emplace(env_.transport, rings_, geometry_->ring);
    return std::unique_ptr<ConsistencyMode>(std::move(wrapped));
  }

  // Compute rank 0 evaluates the whole model; when it died, the lowest
  // survivor reads the final model in its place, while the memory ranks
  // still serve it (before its own release). Costs nothing while rank 0 lives.
  void TakeOverIfRankZeroDies() {
    aware_->set_on_settled([this](const std::vector<model::ComputeIndex>& dead) {
      if (LowestLiveCompute(dead) != me_.value) return Status::Ok();
      taken_over_.emplace(model::MakeTableSet(env_.layout.tables()));
      return aware_->ReadFinalModel(*taken_over_, /*rows=*/{});
    });
  }

  // A fresh epoch evaluator; `prints`: the progress lines are this rank's.
  void StartEvaluating(const ClockLoop& loop, bool prints) {
    evaluator_.emplace(env_.app, env_.facets.parts, info_, loop.local_state(), prints, env_.progress,
                       env_.config.training().epochs(), start_, *env_.wait.time);
  }

  // Resuming: restores the loop's local state and skips to the checkpoint's
  // clock. The checkpointing mode saves that state at each checkpoint clock.
  Status PrepareCheckpointing(ClockLoop& loop) {
    std::int64_t samples_done = 0;
    if (const LoadedCheckpoint* resumed = checkpointer_.resumed()) {
      const std::string name = ComputeStateFileName(me_);
      STALELEARN_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, checkpointer_.ReadResumedFile(name));
      proto::ComputeRankState state;
      if (!state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return DataLoss(fmt::format("{}: {} does not parse", resumed->path.string(), name));
      }
      const std::string& app_state = state.app_state();
      Status restored = env_.facets.RestoreLocalState(
          env_.app, std::as_bytes(std::span(app_state.data(), app_state.size())), loop.mutable_local_state());
      if (!restored.ok()) return restored.WithContext(resumed->path.string() + "/" + name);
      samples_done = state.samples();
      loop.set_first_clock(checkpointer_.first_clock());
    }
    checkpointing_->set_local_state(loop.local_state(), samples_done);
    return Status::Ok();
  }

  // The evaluations, the final model's checksum and the best model (after
  // the "all merged" barrier).
  Status Report(const ClockLoop& loop, const TrainerResult& result, proto::Report& partial) {
    // Compute rank 0's curve points died with it: the taking-over rank's
    // curve has the final point only.
    if (taken_over_) {
      std::fprintf(stderr,
                   "[stalelearn] compute rank %d evaluates the final model in place of the dead compute rank 0\n",
                   me_.value);
      StartEvaluating(loop, /*prints=*/true);
    }
    if (!evaluator_) return Status::Ok();
    const TableSet& final_model = taken_over_ ? *taken_over_ : loop.final_model();
    // Checksum and wall time come from compute rank 0, or the lowest survivor.
    const bool reports_model = me_.value == (aware_ != nullptr ? LowestLiveCompute(aware_->dead()) : 0);
    const int epochs = lifecycle_.EpochsDone(result.end_clock);
    STALELEARN_RETURN_IF_ERROR(evaluator_->Record(epochs, final_model));
    if (evaluator_->in_parts()) {
      *partial.mutable_eval_parts() = {evaluator_->parts().begin(), evaluator_->parts().end()};
      partial.mutable_eval_parts()->rbegin()->set_final(true);  // this Record's
    } else {
      *partial.mutable_curve() = {evaluator_->curve().begin(), evaluator_->curve().end()};
    }
    partial.mutable_final()->set_metric(evaluator_->metric());
    if (reports_model) {
      // A model read in parts is checksummed from the parts' digests (GatherReport).
      if (evaluator_->reads_whole_model()) {
        partial.set_model_checksum(model::HexDigest(model::ModelChecksum(final_model)));
      }
      partial.set_wall_seconds(evaluator_->ElapsedSeconds());
    }
    if (parts_) {
      // Every rank's final part too; compute rank 0 then waits for the parts
      // still on their way (sent before the run's last barrier).
      STALELEARN_RETURN_IF_ERROR(parts_->Share(*partial.eval_parts().rbegin(), final_model));
      STALELEARN_RETURN_IF_ERROR(parts_->AwaitAll(env_.wait.timeout));
    } else {
      if (!early_ || taken_over_ || evaluator_->curve().empty()) return Status::Ok();
      // The final evaluation may be the best; nothing is left to stop.
      STALELEARN_ASSIGN_OR_RETURN(
          const bool exhausted, early_->Observe(epochs, evaluator_->curve().back(), evaluator_->metric(), final_model));
      (void)exhausted;
    }
    if (!reports_model || !early_ || !early_->best()) return Status::Ok();
    *partial.mutable_best() = *early_->best();
    if (early_->best_model() != nullptr) {
      STALELEARN_ASSIGN_OR_RETURN(*partial.mutable_best()->mutable_model_file(),
                                  WriteBestModel(*early_->best_model(), early_->best()->epoch()));
    }
    return Status::Ok();
  }

  // The best evaluation's model beside the checkpoints (report.proto Best):
  // a file per epoch, so a resumed run whose best is worse overwrites none.
  Result<std::string> WriteBestModel(const TableSet& model, int epoch) {
    proto::MemoryShardState state;
    state.set_clock(static_cast<std::uint64_t>(lifecycle_.clock_offset() + epoch * lifecycle_.clocks_per_epoch()));
    for (const model::RowBlock& table : model) {
      const std::span<const std::byte> bytes = table.bytes();
      state.add_tables(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    const std::string bytes = state.SerializeAsString();
    STALELEARN_ASSIGN_OR_RETURN(const proto::CheckpointFile file,
                                WriteCheckpointFile(checkpointer_.dir(), fmt::format("best-model-epoch-{:06}.pb", epoch),
                                                    std::as_bytes(std::span(bytes.data(), bytes.size()))));
    return (checkpointer_.dir() / file.name()).string();
  }

  RunLifecycle& lifecycle_;
  const RankEnv& env_;
  Checkpointer& checkpointer_;
  const DataPlaneGeometry* geometry_;  // null without memory ranks
  const model::ComputeIndex me_;
  const RankInfo info_;
  std::chrono::steady_clock::time_point start_;
  std::optional<SampleSchedule> schedule_;  // this rank's samples, dealt at the start; outlives mode and loop
  // This compute rank's rings and the published regions (owned by the mode).
  std::vector<const transport::RemoteRegion*> rings_;
  std::vector<const transport::RemoteRegion*> published_;
  // Declared before the heartbeat: the heartbeat writes into regions the
  // mode's links own, so it stops first (also on an error return).
  std::unique_ptr<ConsistencyMode> mode_;
  CheckpointingMode* checkpointing_ = nullptr;  // inside the mode, when checkpointed
  DeadRankAwareMode* aware_ = nullptr;         // the mode, when it survives deaths
  std::optional<HeartbeatSender> heartbeat_;
  std::optional<TableSet> taken_over_;  // the final model, when this rank evaluates for a dead compute rank 0
  std::optional<EpochEvaluator> evaluator_;
  std::optional<EarlyStopping> early_;  // the best evaluation; stops early with a patience
  std::optional<EvalPartsExchange> parts_;  // in parts, with early stopping
};

}  // namespace

Result<RankRun> RunComputeRole(RunLifecycle& lifecycle, const DataPlaneGeometry* geometry) {
  return ComputeRole(lifecycle, geometry).Run();
}

}  // namespace stalelearn::runtime
