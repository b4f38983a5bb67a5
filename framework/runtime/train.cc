#include "framework/runtime/train.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>

#include "framework/metrics/counting_transport.h"
#include "framework/model/hash64.h"
#include "framework/runtime/checkpoint_store.h"
#include "framework/runtime/checkpointer.h"
#include "framework/runtime/clock_loop.h"
#include "framework/runtime/early_stopping.h"
#include "framework/runtime/locality_plan.h"
#include "framework/runtime/memory_rank.h"
#include "framework/runtime/merge_config.h"
#include "framework/runtime/peer_liveness.h"
#include "framework/runtime/run_report.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/segmented_mode.h"
#include "framework/runtime/stop_agreement.h"
#include "framework/runtime/stop_request.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::runtime {
namespace {

model::PartitionScheme SchemeOf(proto::Partitioning p) {
  return p == proto::HASH ? model::PartitionScheme::kHash : model::PartitionScheme::kRange;
}

// The lowest compute index not in `dead`: the rank that reports the final
// model (compute rank 0 unless it died).
int LowestLiveCompute(const std::vector<model::ComputeIndex>& dead) {
  int c = 0;
  while (std::ranges::find(dead, model::ComputeIndex{c}) != dead.end()) ++c;
  return c;
}

// The roles of one rank once the environment is built; returns its partial report.
class RankRunner {
 public:
  RankRunner(const RankEnv& env, const ModeDefinition& mode, metrics::CountingTransport& counting)
      : env_(env),
        mode_(mode),
        counting_(counting),
        // Compute rank 0's schedule sets the clocks of an epoch on every rank
        // (clock_loop.h); made once: a schedule copies the rank's samples.
        clocks_per_epoch_(
            ScheduleOf(env.app, env.config, std::max(1, env.roles.compute_ranks()), 0).clocks_per_epoch()),
        clock_offset_(env.app.HasDataInitialization() ? 1 : 0) {}

  Result<RankRun> Run() {
    STALELEARN_RETURN_IF_ERROR(CheckStrata());
    STALELEARN_ASSIGN_OR_RETURN(checkpointer_, Checkpointer::Make(env_, TotalClocks()));
    if (survives_deaths()) {
      if (!mode_.uses_memory_ranks || env_.wait.sim != nullptr) {
        return InvalidArgument(fmt::format("faults.dead_after_seconds needs a mode with memory ranks and a real "
                                           "backend (consistency.mode={}, backend {})",
                                           mode_.name, counting_.name()));
      }
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.PrepareForRankLoss());
    }
    if (!mode_.uses_memory_ranks) {
      if (checkpointer_->segmented()) {
        return InvalidArgument(fmt::format("training.checkpoint needs a consistency mode with memory ranks "
                                           "(consistency.mode={} has none)",
                                           mode_.name));
      }
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // start
      STALELEARN_RETURN_IF_ERROR(StartSchedule());
      ModeContext context{env_, env_.roles.compute_index(me())};
      return RunCompute(context);
    }
    STALELEARN_ASSIGN_OR_RETURN(
        const DataPlaneGeometry geometry,
        MakeDataPlaneGeometry(env_.layout, env_.roles.compute_ranks(), config().cluster().ring_slots(),
                              static_cast<std::size_t>(config().cluster().slot_bytes()),
                              static_cast<std::size_t>(std::max<std::int64_t>(config().cluster().ring_bytes(), 0))));
    if (env_.roles.role(me()) == Role::kMemory) return RunMemory(geometry);
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Sync());
    const model::ComputeIndex ci = env_.roles.compute_index(me());
    STALELEARN_ASSIGN_OR_RETURN(ComputeEndpoints endpoints,
                                ImportComputeEndpoints(env_.transport, env_.bootstrap, env_.roles, ci));
    for (const auto& r : endpoints.rings) rings_of_me_.push_back(r.get());
    for (const auto& p : endpoints.published) published_.push_back(p.get());
    if (checkpointer_->segmented()) {
      // Segment starts (checkpointer.h) repeat these steps; keep them in step
      // with SegmentedConsistency::CrossBoundary.
      STALELEARN_RETURN_IF_ERROR(checkpointer_->StartCollectives(env_.wait.sim));
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // start
      STALELEARN_RETURN_IF_ERROR(checkpointer_->JoinSchedule(env_.wait.sim, /*first=*/true));
      OpenStopAgreement();
      ModeContext context{env_, ci, &endpoints, &geometry};
      return RunCompute(context);
    }
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // start
    STALELEARN_RETURN_IF_ERROR(StartSchedule());
    OpenStopAgreement();
    ModeContext context{env_, ci, &endpoints, &geometry};
    return RunCompute(context);
  }

 private:
  const proto::Config& config() const { return env_.config; }
  transport::Rank me() const { return env_.transport.rank(); }

  // Timing backend: joins the virtual-time schedule (after the start barrier)
  // and leaves it before the final barrier (the scheduler must not wait for a
  // rank blocked in a collective).
  Status StartSchedule() { return env_.wait.sim != nullptr ? env_.wait.sim->StartSchedule() : Status::Ok(); }
  void LeaveSchedule() {
    if (env_.wait.sim != nullptr) env_.wait.sim->LeaveSchedule();
  }

  // Stratified scheduling needs two keyed tables: every rank finds out
  // before the start barrier (one compute rank failing later would leave the
  // memory ranks waiting out the wait limit). The first samples tell.
  Status CheckStrata() const {
    const int strata = StrataOf(config(), env_.roles.compute_ranks());
    if (strata <= 1) return Status::Ok();
    std::vector<std::int64_t> first(static_cast<std::size_t>(std::min<std::int64_t>(env_.app.TrainingSamples(), 4096)));
    std::iota(first.begin(), first.end(), 0);
    const LocalityPlan plan = LocalityPlan::Make(env_.app, first, config().training().scratchpad_bytes(),
                                                 config().training().samples_per_clock(), Strata{strata, 0});
    if (plan.planned()) return Status::Ok();
    return InvalidArgument(fmt::format("training.locality=stratified needs samples that each name one row of two "
                                       "sparse tables; app '{}': {}",
                                       env_.app.name(), plan.stats().reason));
  }

  bool survives_deaths() const { return config().faults().dead_after_seconds() > 0; }

  // After a segment's start barrier (stop_agreement.h).
  void OpenStopAgreement() {
    if (env_.stop != nullptr) env_.stop->Open();
  }
  // The clock every rank stopped before, when a stop was agreed before the
  // run's last clock (one agreed at the very end changes nothing).
  std::optional<std::int64_t> StoppedClock() const {
    if (env_.stop == nullptr || !env_.stop->stop() || env_.stop->stop()->clock >= TotalClocks()) return std::nullopt;
    return env_.stop->stop()->clock;
  }
  // Stopped with training.checkpoint.dir set, after training something (a
  // stop before this run's first clock leaves the checkpoint it resumed
  // from, or none, as it was).
  bool WritesStopCheckpoint() const {
    const std::optional<std::int64_t> clock = StoppedClock();
    return clock && checkpointer_->writes_checkpoints() && *clock > checkpointer_->first_clock();
  }
  // Every rank has written its file of the stop's checkpoint; this commits
  // it (collective, before the "all merged" barrier).
  Status CommitStopCheckpoint() {
    if (!WritesStopCheckpoint()) return Status::Ok();
    return checkpointer_->CommitPending("stalelearn/checkpoint/stop");
  }

  // The samples compute rank c had left after `merged_clock` protocol clocks
  // (stratified scheduling cuts clocks unevenly: there, an estimate).
  std::int64_t SamplesLeft(model::ComputeIndex c, std::uint64_t merged_clock) const {
    const SampleSchedule schedule = ScheduleOf(env_.app, config(), env_.roles.compute_ranks(), c.value);
    const std::int64_t offset = env_.app.HasDataInitialization() ? 1 : 0;
    const std::int64_t spc = config().training().samples_per_clock();
    std::int64_t left = 0;
    for (std::int64_t t = std::max<std::int64_t>(static_cast<std::int64_t>(merged_clock), offset); t < TotalClocks(); ++t) {
      const std::int64_t k = (t - offset) % schedule.clocks_per_epoch();
      left += std::clamp<std::int64_t>(schedule.share() - k * spc, 0, spc);
    }
    return left;
  }

  // The survivors go on without the dead ranks (peer_liveness.h). Every
  // survivor passes the same set (agreed before Release), so `excluded_`
  // is the same on all of them.
  Status ExcludeDead(const std::vector<model::ComputeIndex>& dead) {
    for (model::ComputeIndex c : dead) {
      const transport::Rank rank = env_.roles.compute_rank(c);
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.ExcludeDeadRank(rank));
      excluded_.push_back(rank.value);
    }
    return Status::Ok();
  }

  // The lowest surviving world rank writes the report (world rank 0 unless
  // it died). The bootstrap keeps world rank numbers after ExcludeDeadRank,
  // so this is a world rank, the same on every survivor.
  bool WritesReport() const {
    int writer = 0;
    while (std::ranges::find(excluded_, writer) != excluded_.end()) ++writer;
    return me().value == writer;
  }

  // The epochs trained before protocol clock `end` (all of them unless stopped).
  int EpochsDone(std::int64_t end) const {
    return static_cast<int>(std::max<std::int64_t>(end - clock_offset_, 0) / clocks_per_epoch_);
  }

  // Protocol clocks of the whole run (clock_loop.h).
  std::int64_t TotalClocks() const { return clock_offset_ + config().training().epochs() * clocks_per_epoch_; }

  Result<RankRun> Gather(proto::Report partial, std::vector<ClockRecord> records) {
    if (env_.wait.sim != nullptr) *partial.mutable_simulated() = MakeSimulatedPart(me(), *env_.wait.sim);
    STALELEARN_ASSIGN_OR_RETURN(proto::Report report, GatherReport(env_.bootstrap, config(), env_.app, env_.roles,
                                                                   counting_.name(), mode_, partial));
    std::string trace;
    if (!config().output().trace().empty()) {  // the same config on every rank: all gather or none
      STALELEARN_ASSIGN_OR_RETURN(trace, GatherTraceCsv(env_.bootstrap, records));
    }
    if (const LoadedCheckpoint* resumed = checkpointer_->resumed()) report.set_resumed_from_clock(resumed->manifest.clock());
    if (checkpointer_->lost()) *report.mutable_lost() = *checkpointer_->lost();
    if (const std::optional<std::int64_t> clock = StoppedClock()) {
      proto::Stopped& stopped = *report.mutable_stopped();
      stopped.set_signal(StopSignalName(env_.stop->stop()->signal));
      stopped.set_clock(*clock);
      stopped.set_reason(env_.stop->stop()->signal == kEarlyStopRequest ? "early_stopping" : "signal");
      if (WritesStopCheckpoint()) {
        stopped.set_checkpoint(checkpointer_->CheckpointPath(*clock).string());
      } else if (checkpointer_->resumed() != nullptr) {
        stopped.set_checkpoint(checkpointer_->resumed()->path.string());  // still the one to go on from
      }
    }
    return RankRun{std::move(report), std::move(records), std::move(trace), WritesReport()};
  }

  Result<RankRun> RunMemory(const DataPlaneGeometry& geometry) {
    if (checkpointer_->segmented()) return RunMemorySegments(geometry);
    STALELEARN_ASSIGN_OR_RETURN(MemoryEndpoints endpoints,
                                RegisterMemoryEndpoints(env_.transport, env_.bootstrap, env_.roles,
                                                        env_.roles.memory_index(me()), geometry));
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Sync());
    STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<MemoryRank> memory, MemoryRank::Make(env_, std::move(endpoints),
                                                                                     geometry));
    memory->PublishInitial();
    if (survives_deaths()) {
      memory->EnableDeadRankDetection(std::chrono::duration<double>(config().faults().dead_after_seconds()));
      memory->set_merged_clock_observer(
          [this](std::uint64_t clock) { checkpointer_->MaybeKill(static_cast<std::int64_t>(clock)); });
    }
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // start
    STALELEARN_RETURN_IF_ERROR(StartSchedule());
    OpenStopAgreement();
    STALELEARN_ASSIGN_OR_RETURN(MemoryRankResult result, memory->Run());
    LeaveSchedule();
    if (WritesStopCheckpoint()) STALELEARN_RETURN_IF_ERROR(WriteShard(*memory, *StoppedClock()).status());
    proto::Report partial;
    std::vector<model::ComputeIndex> dead;
    for (const MemoryRank::DeadRank& d : memory->dead_ranks()) {
      dead.push_back(d.rank);
      proto::Lost& lost = *partial.mutable_lost();
      lost.add_ranks(env_.roles.compute_rank(d.rank).value);
      lost.set_clocks(std::max<std::int64_t>(lost.clocks(), TotalClocks() - static_cast<std::int64_t>(d.merged_clock)));
      lost.set_samples(lost.samples() + SamplesLeft(d.rank, d.merged_clock));
    }
    STALELEARN_RETURN_IF_ERROR(ExcludeDead(dead));
    STALELEARN_RETURN_IF_ERROR(CommitStopCheckpoint());
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // all merged
    *partial.add_ranks() = MakeRankReport(me(), Role::kMemory, nullptr, &result.counters, counting_.counters());
    // Gathering is collective: the regions stay alive until the evaluating
    // ranks have read the final model.
    return Gather(std::move(partial), {});
  }

  // A checkpointed or resumed run (checkpointer.h): one data plane per
  // segment; the shard's state goes to disk at each boundary, and the next
  // segment carries it on in memory (a resumed run starts from the bytes).
  Result<RankRun> RunMemorySegments(const DataPlaneGeometry& geometry) {
    const model::MemoryIndex mi = env_.roles.memory_index(me());
    std::optional<proto::MemoryShardState> resumed;
    if (checkpointer_->resumed() != nullptr) {
      STALELEARN_ASSIGN_OR_RETURN(std::vector<std::byte> bytes,
                                  checkpointer_->ReadResumedFile(MemoryShardFileName(mi)));
      resumed.emplace();
      if (!resumed->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return DataLoss(fmt::format("{}: {} does not parse", checkpointer_->resumed()->path.string(),
                                    MemoryShardFileName(mi)));
      }
    }
    MemoryRankResult total;
    std::unique_ptr<MemoryRank> memory;
    std::int64_t begin = checkpointer_->first_clock();
    for (bool first = true;; first = false) {
      STALELEARN_ASSIGN_OR_RETURN(MemoryEndpoints endpoints,
                                  RegisterMemoryEndpoints(env_.transport, env_.bootstrap, env_.roles, mi, geometry));
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Sync());
      if (memory != nullptr) {
        memory->ContinueOnNewEndpoints(std::move(endpoints), geometry);
      } else {
        STALELEARN_ASSIGN_OR_RETURN(memory, MemoryRank::Make(env_, std::move(endpoints), geometry,
                                                             resumed ? &*resumed : nullptr));
        if (resumed) {
          STALELEARN_RETURN_IF_ERROR(memory->PublishRestored(*resumed));
          resumed.reset();
        } else {
          memory->PublishInitial();
        }
        memory->set_merged_clock_observer(
            [this](std::uint64_t clock) { checkpointer_->MaybeKill(static_cast<std::int64_t>(clock)); });
      }
      STALELEARN_RETURN_IF_ERROR(checkpointer_->StartCollectives(env_.wait.sim));
      STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // start
      STALELEARN_RETURN_IF_ERROR(checkpointer_->JoinSchedule(env_.wait.sim, first));
      OpenStopAgreement();
      STALELEARN_ASSIGN_OR_RETURN(MemoryRankResult result, memory->Run());
      total.counters.batches_merged += result.counters.batches_merged;
      total.counters.bytes_merged += result.counters.bytes_merged;
      total.counters.rejected_batches += result.counters.rejected_batches;
      total.snapshots += result.snapshots;
      const std::int64_t end = checkpointer_->SegmentEnd(begin);
      // A stop agreed past this segment's end (a compute rank had crossed
      // the boundary before the request) lands in a later segment.
      if (StoppedClock() && *StoppedClock() <= end) {
        if (WritesStopCheckpoint()) STALELEARN_RETURN_IF_ERROR(WriteShard(*memory, *StoppedClock()).status());
        break;
      }
      if (!checkpointer_->IsBoundary(end)) break;
      STALELEARN_RETURN_IF_ERROR(WriteShard(*memory, end).status());
      STALELEARN_RETURN_IF_ERROR(checkpointer_->LeaveScheduleForBoundary(env_.wait.sim));
      memory->LeaveEndpoints();
      begin = end;
    }
    LeaveSchedule();
    STALELEARN_RETURN_IF_ERROR(CommitStopCheckpoint());
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // all merged
    proto::Report partial;
    *partial.add_ranks() = MakeRankReport(me(), Role::kMemory, nullptr, &total.counters, counting_.counters());
    return Gather(std::move(partial), {});
  }

  // The best evaluation's model beside the checkpoints (report.proto Best):
  // a file per epoch, so a resumed run whose best is worse overwrites none.
  Result<std::string> WriteBestModel(const TableSet& model, int epoch) {
    proto::MemoryShardState state;
    state.set_clock(static_cast<std::uint64_t>(clock_offset_ + epoch * clocks_per_epoch_));
    for (const model::RowBlock& table : model) {
      const std::span<const std::byte> bytes = table.bytes();
      state.add_tables(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    }
    const std::string bytes = state.SerializeAsString();
    STALELEARN_ASSIGN_OR_RETURN(const proto::CheckpointFile file,
                                WriteCheckpointFile(checkpointer_->dir(), fmt::format("best-model-epoch-{:06}.pb", epoch),
                                                    std::as_bytes(std::span(bytes.data(), bytes.size()))));
    return (checkpointer_->dir() / file.name()).string();
  }

  // This memory rank's file of checkpoint `clock` (after Run returned);
  // returns the state written.
  Result<proto::MemoryShardState> WriteShard(const MemoryRank& memory, std::int64_t clock) {
    proto::MemoryShardState state = memory.SaveState(static_cast<std::uint64_t>(clock));
    const std::string bytes = state.SerializeAsString();
    STALELEARN_RETURN_IF_ERROR(checkpointer_->WriteFile(clock, MemoryShardFileName(env_.roles.memory_index(me())),
                                                        std::as_bytes(std::span(bytes.data(), bytes.size()))));
    return state;
  }

  Result<RankRun> RunCompute(ModeContext& context) {
    const auto start = std::chrono::steady_clock::now();
    const RankInfo info{context.me, env_.roles.compute_ranks(), config().seed()};
    std::unique_ptr<ConsistencyMode> mode;
    SegmentedConsistency* segmented = nullptr;
    if (checkpointer_->segmented()) {
      STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<SegmentedConsistency> made,
                                  SegmentedConsistency::Make(env_, mode_, context.me, std::move(*context.endpoints),
                                                             *context.geometry, *checkpointer_));
      segmented = made.get();
      mode = std::move(made);
    } else {
      STALELEARN_ASSIGN_OR_RETURN(mode, mode_.create(context));
    }
    DeadRankAwareMode* aware = nullptr;
    std::optional<HeartbeatSender> heartbeat;
    std::optional<TableSet> taken_over;  // the final model, when this rank evaluates for a dead compute rank 0
    if (survives_deaths()) {
      // The regions are owned by the mode's links from here on; their addresses stay.
      std::vector<const transport::RemoteRegion*> rings, published;
      for (const auto& r : rings_of_me_) rings.push_back(r);
      for (const auto& p : published_) published.push_back(p);
      auto wrapped = std::make_unique<DeadRankAwareMode>(
          env_, std::move(mode), published, context.geometry->published[0],
          [this](std::int64_t clock) { checkpointer_->MaybeKill(clock); });
      aware = wrapped.get();
      if (!env_.app.EvaluatesInParts() && context.me.value != 0) {
        // Compute rank 0 evaluates the whole model; when it died, the lowest
        // survivor reads the final model in its place, while the memory
        // ranks still serve it (before its own release). Costs nothing while
        // rank 0 lives.
        aware->set_on_settled([this, aware, &taken_over, me = context.me](
                                  const std::vector<model::ComputeIndex>& dead) {
          if (LowestLiveCompute(dead) != me.value) return Status::Ok();
          taken_over.emplace(model::MakeTableSet(env_.layout.tables()));
          return aware->ReadFinalModel(*taken_over);
        });
      }
      mode = std::move(wrapped);
      heartbeat.emplace(env_.transport, rings, context.geometry->ring);
    }
    ClockLoop loop(env_, info, *mode);
    if (segmented != nullptr) STALELEARN_RETURN_IF_ERROR(PrepareSegments(*segmented, loop, context.me));
    // The whole model is evaluated on compute rank 0 (a survivor takes over
    // the final evaluation if it died: set_on_settled above); parts on every
    // compute rank.
    const bool evaluates = env_.app.EvaluatesInParts() || context.me.value == 0;
    std::optional<EpochEvaluator> evaluator;
    std::optional<EarlyStopping> early;  // the best evaluation; stops early with a patience
    if (evaluates) {
      evaluator.emplace(env_.app, info, loop.local_state(), context.me.value == 0, env_.progress,
                        config().training().epochs(), start, env_.wait.sim);
      loop.set_evaluator(&*evaluator);
      if (!evaluator->in_parts()) {
        early.emplace(config().training().early_stopping());
        early->set_keep_best_model(checkpointer_->writes_checkpoints());
        loop.set_early_stopping(&*early);
      }
    }
    STALELEARN_ASSIGN_OR_RETURN(TrainerResult result, loop.Run());
    STALELEARN_RETURN_IF_ERROR(loop.early_stopping_error());
    heartbeat.reset();  // released: the memory ranks watch this rank no more
    LeaveSchedule();  // after the final read and release: they are part of the timeline
    if (aware != nullptr) STALELEARN_RETURN_IF_ERROR(ExcludeDead(aware->dead()));
    if (WritesStopCheckpoint()) {
      const std::int64_t samples = segmented != nullptr ? segmented->samples_done() : result.samples;
      STALELEARN_RETURN_IF_ERROR(
          checkpointer_->WriteComputeState(*StoppedClock(), context.me, loop.local_state(), samples));
    }
    STALELEARN_RETURN_IF_ERROR(CommitStopCheckpoint());
    STALELEARN_RETURN_IF_ERROR(env_.bootstrap.Barrier());  // all merged
    // Compute rank 0's curve points died with it: the taking-over rank's
    // curve has the final point only.
    if (taken_over) {
      std::fprintf(stderr,
                   "[stalelearn] compute rank %d evaluates the final model in place of the dead compute rank 0\n",
                   context.me.value);
      evaluator.emplace(env_.app, info, loop.local_state(), /*prints=*/true, env_.progress,
                        config().training().epochs(), start, env_.wait.sim);
    }
    const TableSet& final_model = taken_over ? *taken_over : loop.final_model();
    // Checksum and wall time come from compute rank 0, or the lowest survivor.
    const bool reports_model = context.me.value == (aware != nullptr ? LowestLiveCompute(aware->dead()) : 0);
    proto::Report partial;
    if (evaluator) {
      STALELEARN_RETURN_IF_ERROR(evaluator->Record(EpochsDone(result.end_clock), final_model));
      if (evaluator->in_parts()) {
        *partial.mutable_eval_parts() = {evaluator->parts().begin(), evaluator->parts().end()};
      } else {
        *partial.mutable_curve() = {evaluator->curve().begin(), evaluator->curve().end()};
      }
      partial.mutable_final()->set_metric(evaluator->metric());
      if (reports_model) {
        partial.set_model_checksum(model::HexDigest(model::ModelChecksum(final_model)));
        partial.set_wall_seconds(evaluator->ElapsedSeconds());
      }
      if (early && !taken_over && !evaluator->curve().empty()) {  // the final evaluation may be the best
        STALELEARN_ASSIGN_OR_RETURN(const bool exhausted, early->Observe(EpochsDone(result.end_clock),
                                                                         evaluator->curve().back(),
                                                                         evaluator->metric(), final_model));
        (void)exhausted;  // nothing left to stop
        if (reports_model && early->best()) {
          *partial.mutable_best() = *early->best();
          if (early->best_model() != nullptr) {
            STALELEARN_ASSIGN_OR_RETURN(*partial.mutable_best()->mutable_model_file(),
                                        WriteBestModel(*early->best_model(), early->best()->epoch()));
          }
        }
      }
    }
    *partial.add_ranks() = MakeRankReport(me(), Role::kCompute, &result, nullptr, counting_.counters());
    return Gather(std::move(partial), std::move(result.records));
  }

  // Resuming: restores the loop's local state and skips to the checkpoint's
  // clock. The segmented mode saves that state at each boundary.
  Status PrepareSegments(SegmentedConsistency& segmented, ClockLoop& loop, model::ComputeIndex me) {
    std::int64_t samples_done = 0;
    if (checkpointer_->resumed() != nullptr) {
      const std::string name = ComputeStateFileName(me);
      STALELEARN_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, checkpointer_->ReadResumedFile(name));
      proto::ComputeRankState state;
      if (!state.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return DataLoss(fmt::format("{}: {} does not parse", checkpointer_->resumed()->path.string(), name));
      }
      const std::string& app_state = state.app_state();
      Status restored = env_.app.RestoreLocalState(std::as_bytes(std::span(app_state.data(), app_state.size())),
                                                   loop.mutable_local_state());
      if (!restored.ok()) return restored.WithContext(checkpointer_->resumed()->path.string() + "/" + name);
      samples_done = state.samples();
      loop.set_first_clock(checkpointer_->first_clock());
    }
    segmented.set_local_state(loop.local_state(), samples_done);
    return Status::Ok();
  }

  const RankEnv& env_;
  const ModeDefinition& mode_;
  metrics::CountingTransport& counting_;
  std::unique_ptr<Checkpointer> checkpointer_;
  // This compute rank's rings and the published regions (owned by the mode).
  std::vector<const transport::RemoteRegion*> rings_of_me_;
  std::vector<const transport::RemoteRegion*> published_;
  std::vector<int> excluded_;  // world ranks excluded as dead (ExcludeDead)
  const std::int64_t clocks_per_epoch_;
  const std::int64_t clock_offset_;  // 1 when clock 0 carries the data-dependent initialisation
};

}  // namespace

Result<RankRun> TrainRank(const TrainInputs& inputs, transport::Bootstrap& bootstrap) {
  const proto::Config& config = inputs.config;
  STALELEARN_ASSIGN_OR_RETURN(const ModeDefinition* mode, inputs.modes.Find(config.consistency().mode()));
  const std::map<std::string, std::string> options(config.backend().options().begin(),
                                                   config.backend().options().end());
  const transport::BackendContext context{bootstrap, options, inputs.backends};
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<transport::Transport> backend,
                              inputs.backends.Create(config.backend().name(), context));
  // Capabilities are asked of the transport (decorators forward them).
  sync::WaitOptions wait = inputs.wait;
  sync::ApplyWaitConfig(config.wait(), wait);
  wait.sim = backend->simulated_time();
  if (wait.sim != nullptr) {
    // Under the virtual-time scheduler an idle poll waits for another rank's
    // progress; otherwise (mpirun) it backs off in real time as usual, which
    // also keeps the number of (charged) polls down.
    wait.backoff.on_idle = [sim = wait.sim]() -> Result<bool> {
      if (!sim->deterministic()) return false;
      STALELEARN_RETURN_IF_ERROR(sim->IdleUntilProgress());
      return true;
    };
  }
  std::unique_ptr<transport::Transport> wrapped;
  if (inputs.hooks.wrap_transport) wrapped = inputs.hooks.wrap_transport(*backend);
  metrics::CountingTransport counting(wrapped ? *wrapped : *backend);

  STALELEARN_ASSIGN_OR_RETURN(
      RoleMap roles, RoleMap::Make(bootstrap.world_size(), mode->uses_memory_ranks ? config.cluster().memory_ranks() : 0,
                                   config.cluster().placement()));
  std::vector<TableSpec> tables = inputs.app.Tables();
  STALELEARN_RETURN_IF_ERROR(model::ValidateTables(tables));
  STALELEARN_ASSIGN_OR_RETURN(std::vector<sync::MergePolicySpec> merge,
                              MergeSpecsOf(config, tables, mode->uses_memory_ranks));
  for (sync::MergePolicySpec& spec : merge) spec.batches_per_clock = std::max(1, roles.compute_ranks());
  const model::ModelLayout layout(std::move(tables), std::max(1, roles.memory_ranks()),
                                  SchemeOf(config.cluster().partitioning()));
  // training.locality "auto" becomes what it means for this app and rank
  // count (every rank resolves the same config alike).
  proto::Config resolved = config;
  // training.samples_per_clock 0 becomes this rank count's share of the
  // global samples per clock.
  resolved.mutable_training()->set_locality(ResolvedLocality(inputs.app, config, roles.compute_ranks()));
  resolved.mutable_training()->set_samples_per_clock(
      static_cast<std::int32_t>(SamplesPerClock(config.training(), roles.compute_ranks())));
  // A stop request becomes one clock every rank stops at (stop_agreement.h);
  // a rank blocked on a peer that already agreed joins from its wait.
  const StopAgreement::Kind stop_kind = config.faults().dead_after_seconds() > 0 ? StopAgreement::Kind::kOff
                                        : mode->uses_memory_ranks               ? StopAgreement::Kind::kOnRequest
                                                                                : StopAgreement::Kind::kEveryClock;
  StopAgreement stop(
      bootstrap, [&counting] { counting.Progress(); }, wait.sim, stop_kind, roles.compute_ranks(), wait.timeout);
  stop.set_request_at_clock(config.debug().stop_at_clock());
  if (config.training().early_stopping().patience() > 0) {
    if (inputs.app.EvaluatesInParts()) {
      return InvalidArgument(fmt::format("training.early_stopping: app '{}' evaluates in parts on every compute "
                                         "rank; early stopping needs an app that evaluates the whole model",
                                         inputs.app.name()));
    }
    if (!stop.in_threads()) {
      return InvalidArgument("training.early_stopping needs ranks as threads (--ranks C:M) without "
                             "faults.dead_after_seconds: under mpirun the evaluating rank's stop cannot reach the "
                             "other processes yet");
    }
  }
  wait.while_waiting = [&stop] { return stop.Poll(); };
  const RankEnv env{resolved,
                    inputs.app,
                    layout,
                    roles,
                    counting,
                    bootstrap,
                    inputs.hooks,
                    wait,
                    metrics::ProgressPrinter(config.output().quiet()),
                    merge,
                    &stop};
  RankRunner runner(env, *mode, counting);
  return runner.Run();
}

}  // namespace stalelearn::runtime
