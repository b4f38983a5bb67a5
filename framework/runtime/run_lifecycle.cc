#include "framework/runtime/run_lifecycle.h"
#include "framework/runtime/app_facets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "framework/runtime/locality_plan.h"
#include "framework/runtime/run_report.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/stop_agreement.h"
#include "framework/runtime/stop_request.h"

namespace stalelearn::runtime {

RunLifecycle::RunLifecycle(const RankEnv& env, const ModeDefinition& mode, metrics::CountingTransport& counting)
    : env_(env),
      mode_(mode),
      counting_(counting),
      // The clocks of an epoch, the same on every rank (clock_loop.h),
      // without dealing the samples (a schedule copies a rank's samples).
      clocks_per_epoch_(ClocksPerEpochOf(env.app, env.config, std::max(1, env.roles.compute_ranks()))),
      clock_offset_(env.facets.initializes_from_data() ? 1 : 0) {}

Result<std::unique_ptr<RunLifecycle>> RunLifecycle::Make(const RankEnv& env, const ModeDefinition& mode,
                                                        metrics::CountingTransport& counting) {
  std::unique_ptr<RunLifecycle> lifecycle(new RunLifecycle(env, mode, counting));
  STALELEARN_RETURN_IF_ERROR(lifecycle->CheckStrata());
  STALELEARN_ASSIGN_OR_RETURN(lifecycle->checkpointer_, Checkpointer::Make(env, lifecycle->TotalClocks()));
  STALELEARN_RETURN_IF_ERROR(lifecycle->CheckFaultsAndCheckpoints());
  return lifecycle;
}

// Stratified scheduling needs two keyed tables: every rank finds out before
// the start barrier (one compute rank failing later would leave the memory
// ranks waiting out the wait limit). The first samples tell.
Status RunLifecycle::CheckStrata() const {
  const proto::Config& config = env_.config;
  const int strata = StrataOf(config, env_.roles.compute_ranks());
  if (strata <= 1) return Status::Ok();
  std::vector<std::int64_t> first(static_cast<std::size_t>(std::min<std::int64_t>(env_.app.TrainingSamples(), 4096)));
  std::iota(first.begin(), first.end(), 0);
  const LocalityPlan plan = LocalityPlan::Make(env_.app, first, config.training().scratchpad_bytes(),
                                               config.training().samples_per_clock(), RunStrata(strata, 0));
  if (plan.planned()) return Status::Ok();
  return InvalidArgument(fmt::format("training.locality=stratified needs samples that each name one row of two "
                                     "sparse tables; app '{}': {}",
                                     env_.app.name(), plan.stats().reason));
}

Status RunLifecycle::CheckFaultsAndCheckpoints() {
  if (survives_deaths()) {
    if (!mode_.uses_memory_ranks || !env_.wait.time->survives_rank_loss()) {
      return InvalidArgument(fmt::format("faults.dead_after_seconds needs a mode with memory ranks and a real "
                                         "backend (consistency.mode={}, backend {})",
                                         mode_.name, counting_.name()));
    }
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.PrepareForRankLoss());
  }
  if (!mode_.uses_memory_ranks && checkpointer_->checkpointed()) {
    return InvalidArgument(fmt::format("training.checkpoint needs a consistency mode with memory ranks "
                                       "(consistency.mode={} has none)",
                                       mode_.name));
  }
  return Status::Ok();
}

int RunLifecycle::EpochsDone(std::int64_t end) const {
  return static_cast<int>(std::max<std::int64_t>(end - clock_offset_, 0) / clocks_per_epoch_);
}

Result<MemoryEndpoints> RunLifecycle::ConnectMemory(const DataPlaneGeometry& geometry) {
  STALELEARN_ASSIGN_OR_RETURN(MemoryEndpoints endpoints,
                              RegisterMemoryEndpoints(env_.transport, env_.bootstrap, env_.roles,
                                                      env_.roles.memory_index(me()), geometry));
  STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Sync());
  return endpoints;
}

Result<ComputeEndpoints> RunLifecycle::ConnectCompute() {
  STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Sync());
  return ImportComputeEndpoints(env_.transport, env_.bootstrap, env_.roles, env_.roles.compute_index(me()));
}

Status RunLifecycle::Start() {
  // A resumed run agrees on its virtual start time (checkpointer.h); any
  // other run skips it, so its schedule is the plain one.
  if (checkpointer_->resumed() != nullptr) STALELEARN_RETURN_IF_ERROR(checkpointer_->AlignResumedStart());
  STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // start
  STALELEARN_RETURN_IF_ERROR(checkpointer_->JoinSchedule());
  // After the start barrier (stop_agreement.h).
  if (env_.stop != nullptr) env_.stop->Open();
  return Status::Ok();
}

void RunLifecycle::LeaveSchedule() { env_.wait.time->LeaveSchedule(); }

std::optional<std::int64_t> RunLifecycle::StoppedClock() const {
  if (env_.stop == nullptr || !env_.stop->stop() || env_.stop->stop()->clock >= TotalClocks()) return std::nullopt;
  return env_.stop->stop()->clock;
}

// A stop before this run's first clock leaves the checkpoint it resumed
// from, or none, as it was.
bool RunLifecycle::HasStopCheckpoint() const {
  const std::optional<std::int64_t> clock = StoppedClock();
  return clock && checkpointer_->writes_checkpoints() && *clock > checkpointer_->first_clock();
}

// At a checkpoint clock the cut is the stop's checkpoint, file for file:
// every rank wrote its part of it before stopping.
bool RunLifecycle::WritesStopCheckpoint() const {
  return HasStopCheckpoint() && !checkpointer_->IsCheckpointClock(*StoppedClock());
}

// The bootstrap keeps world rank numbers after ExcludeDeadRank, so
// `excluded_` (and the writer) is the same on every survivor.
Status RunLifecycle::ExcludeDead(const std::vector<model::ComputeIndex>& dead) {
  for (model::ComputeIndex c : dead) {
    const transport::Rank rank = env_.roles.compute_rank(c);
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.ExcludeDeadRank(rank));
    excluded_.push_back(rank.value);
  }
  return Status::Ok();
}

bool RunLifecycle::WritesReport() const {
  int writer = 0;
  while (std::ranges::find(excluded_, writer) != excluded_.end()) ++writer;
  return me().value == writer;
}

Status RunLifecycle::EndTraining() {
  // Every rank has written its file of the stop's checkpoint: commit it
  // (collective, before the "all merged" barrier).
  if (WritesStopCheckpoint()) {
    STALELEARN_RETURN_IF_ERROR(checkpointer_->CommitPending("stalelearn/checkpoint/stop"));
  }
  STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // all merged
  if (WritesReport()) WarnIfLastCutIncomplete();
  return Status::Ok();
}

// Every rank wrote its part of each checkpoint it reached before the "all
// merged" barrier, and the last one to write committed it: a checkpoint
// still without a manifest means the ranks do not share the directory (or a
// rank died). Training itself is fine, so a warning, not an error.
void RunLifecycle::WarnIfLastCutIncomplete() const {
  const CheckpointClocks clocks = checkpointer_->clocks();
  if (!checkpointer_->writes_checkpoints() || clocks.every <= 0) return;
  const std::int64_t end = StoppedClock() ? *StoppedClock() : clocks.total - 1;  // a cut at the stop's clock counts
  const std::int64_t last = end / clocks.every * clocks.every;
  if (!clocks.Includes(last)) return;
  const std::filesystem::path where = checkpointer_->CheckpointPath(last);
  std::error_code ec;
  if (std::filesystem::exists(where / kManifestName, ec)) return;
  if (!excluded_.empty()) {
    std::fprintf(stderr,
                 "[stalelearn] warning: checkpoint %s is incomplete: checkpoints after a rank died lack its part\n",
                 where.string().c_str());
  } else {
    std::fprintf(stderr,
                 "[stalelearn] warning: checkpoint %s has no manifest after every rank wrote its part: "
                 "training.checkpoint.dir must be one directory every rank sees\n",
                 where.string().c_str());
  }
}

Result<RankRun> RunLifecycle::Gather(proto::Report partial, std::vector<ClockRecord> records) {
  const proto::Config& config = env_.config;
  if (const std::optional<transport::SimulatedSummary> sim = env_.wait.time->Summary()) {
    *partial.mutable_simulated() = MakeSimulatedPart(me(), *sim);
  }
  STALELEARN_ASSIGN_OR_RETURN(proto::Report report, GatherReport(env_.bootstrap, config, env_.app, env_.roles,
                                                                 counting_.name(), mode_, partial));
  std::string trace;
  if (!config.output().trace().empty()) {  // the same config on every rank: all gather or none
    STALELEARN_ASSIGN_OR_RETURN(trace, GatherTraceCsv(env_.bootstrap, records));
  }
  if (const LoadedCheckpoint* resumed = checkpointer_->resumed()) report.set_resumed_from_clock(resumed->manifest.clock());
  if (checkpointer_->lost()) *report.mutable_lost() = *checkpointer_->lost();
  if (const std::optional<std::int64_t> clock = StoppedClock()) {
    proto::Stopped& stopped = *report.mutable_stopped();
    stopped.set_signal(StopSignalName(env_.stop->stop()->signal));
    stopped.set_clock(*clock);
    stopped.set_reason(env_.stop->stop()->signal == kEarlyStopRequest ? "early_stopping" : "signal");
    if (HasStopCheckpoint()) {
      stopped.set_checkpoint(checkpointer_->CheckpointPath(*clock).string());
    } else if (checkpointer_->resumed() != nullptr) {
      stopped.set_checkpoint(checkpointer_->resumed()->path.string());  // still the one to go on from
    }
  }
  return RankRun{std::move(report), std::move(records), std::move(trace), WritesReport()};
}

}  // namespace stalelearn::runtime
