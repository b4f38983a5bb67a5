#include "framework/runtime/clock_loop.h"

#include <fmt/format.h>

#include <optional>

#include "framework/runtime/stop_agreement.h"
#include "framework/runtime/stop_request.h"

namespace stalelearn::runtime {

ClockLoop::ClockLoop(const RankEnv& env, RankInfo info, ConsistencyMode& mode, const SampleSchedule& schedule)
    : env_(env),
      facets_(env.facets),
      info_(info),
      mode_(mode),
      schedule_(schedule),
      straggler_(env.config.training().straggler(), info.rank.value, env.config.seed()),
      phases_(*env.wait.time, env.transport),
      state_(facets_.CreateLocalState(info, schedule_.samples())),
      clock_offset_(facets_.initializes_from_data() ? 1 : 0) {
  const int threads = env.config.training().threads_per_rank();
  if (threads > 1 && facets_.kernel_runs_in_chunks()) parallel_ = std::make_unique<ParallelKernel>(env.app, threads);
  const proto::TrainingConfig& training = env.config.training();
  if (training.locality() != "none") {
    plan_ = LocalityPlan::Make(env.app, schedule_.ascending(), training.scratchpad_bytes(), training.samples_per_clock(),
                               RunStrata(StrataOf(env.config, info.compute_ranks), info.rank.value));
  }
}

Status ClockLoop::Initialize() {
  WorkCounters work;
  RandomStream random = RandomStream::For(info_.seed, info_.rank.value, -1);
  KernelContext context{info_, 0, -1, random, state_.get(), work};
  facets_.data_initialization->InitializeFromData(mode_.view(), context);
  STALELEARN_RETURN_IF_ERROR(env_.wait.time->ChargeCompute(metrics::ToComputeWork(work)));
  return mode_.ShareInitialization();
}

void ClockLoop::RunKernel(std::span<const std::int64_t> samples, KernelContext& context) {
  // Chunks on threads only where the kernel works on the replica (not in
  // DIRECT mode's fetched rows).
  auto* replica = parallel_ != nullptr ? dynamic_cast<model::Replica*>(&mode_.view()) : nullptr;
  if (replica != nullptr) {
    parallel_->Run(samples, *replica, context);
  } else {
    env_.app.UpdateBatch(samples, mode_.view(), context);
  }
}

Result<bool> ClockLoop::StopsBefore(std::int64_t clock) {
  if (env_.stop == nullptr) return false;
  // Compute rank 0 of an app that evaluates in parts: the evaluations whose
  // parts arrived since (no collective: a probe of the bootstrap).
  if (parts_ != nullptr && parts_->decides() && early_error_.ok()) {
    STALELEARN_RETURN_IF_ERROR(OnEarlyStopping(parts_->Poll()));
  }
  return env_.stop->StopsBefore(info_.rank.value, clock);
}

Status ClockLoop::OnEarlyStopping(Result<bool> exhausted) {
  // A bad early_stopping.metric stops the run with every rank at one clock,
  // and the rank fails after it (failing here would leave the others
  // waiting for its clocks). Other errors (a lost message) fail at once.
  if (!exhausted.ok() && exhausted.status().code() != StatusCode::kInvalidArgument) return exhausted.status();
  if (!exhausted.ok() && early_error_.ok()) early_error_ = exhausted.status();
  if ((!exhausted.ok() || *exhausted) && env_.stop != nullptr) {
    STALELEARN_RETURN_IF_ERROR(env_.stop->RequestLocal(kEarlyStopRequest));
  }
  return Status::Ok();
}

void ClockLoop::MaybeReportProgress(int epoch, int epochs, std::int64_t clocks_done, std::int64_t clocks_per_epoch) {
  const double every = env_.config.output().progress_seconds();
  if (info_.rank.value != 0 || every <= 0) return;  // (a quiet run's printer prints nothing)
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < std::chrono::duration<double>(every)) return;
  last_progress_ = now;
  std::string simulated;
  if (const std::optional<transport::SimulatedSummary> sim = env_.wait.time->Summary()) {
    simulated = fmt::format(", simulated {:.6f} s", transport::ToSeconds(sim->now.time_since_epoch()));
  }
  env_.progress.Line(fmt::format("epoch {}/{}: clock {}/{} ({:.0f}%), elapsed {:.2f} s{}", epoch + 1, epochs,
                                 clocks_done, clocks_per_epoch,
                                 100.0 * static_cast<double>(clocks_done) / static_cast<double>(clocks_per_epoch),
                                 std::chrono::duration<double>(now - started_).count(), simulated));
}

Result<TrainerResult> ClockLoop::Run() {
  started_ = last_progress_ = std::chrono::steady_clock::now();
  if (env_.stop != nullptr) env_.stop->Begin(info_.rank.value, std::max(first_clock_, clock_offset_));
  if (plan_.planned() && plan_.stratified()) {
    mode_.WillFocus(model::TableId{static_cast<std::uint32_t>(plan_.stats().table_b)});
  }
  if (clock_offset_ > 0 && first_clock_ == 0) STALELEARN_RETURN_IF_ERROR(Initialize());
  if (clock_offset_ == 0 && first_clock_ == 0) mode_.StartsFromInitialValues();
  if (StrataOf(env_.config, info_.compute_ranks) > 1 && !plan_.planned()) {
    return InvalidArgument(fmt::format("training.locality=stratified needs samples that each name one row of two "
                                       "sparse tables; app '{}': {}",
                                       env_.app.name(), plan_.stats().reason));
  }
  TrainerResult result;
  result.plan = plan_.stats();
  if (info_.rank.value == 0 && plan_.planned()) {
    const LocalityPlanStats& p = plan_.stats();
    env_.progress.Line(fmt::format("locality plan: {}; per clock {:.0f} rows named, {:.0f} distinct ({:.0f} KiB); "
                                   "largest sub-batch {} KiB",
                                   p.reason, p.rows_named_per_clock, p.distinct_rows_per_clock,
                                   p.bytes_per_clock / 1024, p.largest_subbatch_bytes / 1024));
  }
  // train_seconds: from here (after any data initialisation) to the final
  // flush, evaluations left out.
  const auto loop_start = std::chrono::steady_clock::now();
  std::chrono::duration<double> evaluating{0};
  const int epochs = env_.config.training().epochs();
  const int eval_every = env_.config.training().eval_every_epochs();
  const std::int64_t clocks_per_epoch = schedule_.clocks_per_epoch();
  // A full-size model, made at the first evaluation during the run and
  // reused for the final read: a run evaluated only at its end makes one.
  TableSet eval_model;
  std::vector<std::int64_t> order;
  std::int64_t end = clock_offset_ + epochs * clocks_per_epoch;  // the clock the run stops before
  bool stopped = false;
  for (int epoch = 0; epoch < epochs && !stopped; ++epoch) {
    if (plan_.planned()) {
      plan_.EpochCellsInto(epoch, info_.seed + 0x9E37ull * static_cast<std::uint64_t>(info_.rank.value + 1),
                           epoch_cells_);
    } else {
      schedule_.EpochOrderInto(epoch, order);
    }
    for (std::int64_t k = 0; k < clocks_per_epoch; ++k) {
      ClockRecord record;
      record.rank = info_.rank;
      record.clock = clock_offset_ + epoch * clocks_per_epoch + k;
      record.ends_epoch = k + 1 == clocks_per_epoch;
      if (record.clock < first_clock_) continue;  // resumed: in the checkpoint
      STALELEARN_ASSIGN_OR_RETURN(const bool stops, StopsBefore(record.clock));
      if (stops) {  // a stop every rank agreed on (stop_agreement.h)
        end = record.clock;
        stopped = true;
        break;
      }
      if (plan_.planned() && plan_.stratified()) {
        // A new sub-epoch: the replica keeps only its stripe of B fresh.
        const LocalityPlan::Focus focus = plan_.FocusOf(k, clocks_per_epoch);
        if (!(focus == focus_)) {
          const PhaseTimes::Scope timed = phases_.Time(LoopPhase::kHandOver);
          // The writer's sub-epoch with the stripe ended before this clock
          // (one of the epoch before where settled_before < 0; none before 0).
          const auto settled = [&](const LocalityPlan::Focus& f) {
            return std::max<std::int64_t>(0, record.clock + (f.settled_before - k));
          };
          STALELEARN_RETURN_IF_ERROR(mode_.FocusRows(model::TableId{static_cast<std::uint32_t>(focus.table)},
                                                     focus.first, focus.last, record.clock + (focus.until - k),
                                                     model::ComputeIndex{focus.writer_before}, settled(focus), record));
          focus_ = focus;
          if (focus.until < clocks_per_epoch) {  // the next stripe, read ahead where the mode can
            const LocalityPlan::Focus next = plan_.FocusOf(focus.until, clocks_per_epoch);
            STALELEARN_RETURN_IF_ERROR(mode_.PrefetchFocus(model::TableId{static_cast<std::uint32_t>(next.table)},
                                                           next.first, next.last,
                                                           model::ComputeIndex{next.writer_before}, settled(next)));
          }
        }
      }
      const std::span<const std::int64_t> samples =
          plan_.planned() ? plan_.ClockSamplesInto(epoch_cells_, k, schedule_, clock_samples_)
                          : schedule_.ClockSamples(order, k);
      {
        const PhaseTimes::Scope timed = phases_.Time(LoopPhase::kGateRefresh);
        STALELEARN_RETURN_IF_ERROR(mode_.BeforeClock(record.clock, samples, record));
      }
      record.staleness_epochs = static_cast<double>(record.observed_staleness) / static_cast<double>(clocks_per_epoch);
      if (env_.hooks.after_refresh && mode_.replica() != nullptr) {
        // Hooks see a full-size model: the rows the replica holds, zeros elsewhere.
        if (hook_model_.empty()) hook_model_ = model::MakeTableSet(env_.layout.tables());
        mode_.replica()->CopyHeldRowsTo(hook_model_);
        env_.hooks.after_refresh(record, hook_model_);
      }

      WorkCounters work;
      RandomStream random = RandomStream::For(info_.seed, info_.rank.value, record.clock);
      KernelContext context{info_, epoch, record.clock, random, state_.get(), work};
      {
        const PhaseTimes::Scope timed = phases_.Time(LoopPhase::kKernel);
        const auto compute_start = std::chrono::steady_clock::now();
        if (!samples.empty()) RunKernel(samples, context);
        work.samples += static_cast<std::int64_t>(samples.size());
        if (first_epoch_ < 0) first_epoch_ = epoch;  // a resumed run's first epoch is the one it resumes in
        if (epoch == first_epoch_) work.first_epoch_samples = work.samples;
        STALELEARN_RETURN_IF_ERROR(
            straggler_.EndComputeStep(*env_.wait.time, work, std::chrono::steady_clock::now() - compute_start,
                                      record.clock));
      }
      result.samples += static_cast<std::int64_t>(samples.size());

      {
        const PhaseTimes::Scope timed = phases_.Time(LoopPhase::kPush);
        STALELEARN_RETURN_IF_ERROR(mode_.AfterClock(record.clock, record));
      }
      result.Add(record);
      MaybeReportProgress(epoch, epochs, k + 1, clocks_per_epoch);
    }
    last_progress_ = std::chrono::steady_clock::now();  // an epoch's end has its own line
    if (stopped) break;  // the final evaluation follows
    const bool last = epoch + 1 == epochs;  // the final evaluation happens after all ranks finished
    const bool before_resume = clock_offset_ + (epoch + 1) * clocks_per_epoch < first_clock_;
    if (evaluator_ != nullptr && !last && !before_resume && (epoch + 1) % eval_every == 0) {
      const auto eval_start = std::chrono::steady_clock::now();
      const PhaseTimes::Scope timed = phases_.Time(LoopPhase::kEvaluate);
      // Pages only where the read writes: a model read in parts costs its part.
      if (eval_model.empty()) eval_model = model::MakeTableSet(env_.layout.tables(), /*touch_pages=*/false);
      STALELEARN_RETURN_IF_ERROR(mode_.ReadModel(eval_model, evaluator_->rows()));
      STALELEARN_RETURN_IF_ERROR(evaluator_->Record(epoch + 1, eval_model));
      if (parts_ != nullptr) {
        STALELEARN_RETURN_IF_ERROR(parts_->Share(evaluator_->parts().back(), eval_model));
        if (parts_->decides() && early_error_.ok()) STALELEARN_RETURN_IF_ERROR(OnEarlyStopping(parts_->Poll()));
      } else if (early_ != nullptr) {
        STALELEARN_RETURN_IF_ERROR(OnEarlyStopping(
            early_->Observe(epoch + 1, evaluator_->curve().back(), evaluator_->metric(), eval_model)));
      }
      evaluating += std::chrono::steady_clock::now() - eval_start;
    }
  }
  {
    const PhaseTimes::Scope timed = phases_.Time(LoopPhase::kFinish);
    STALELEARN_RETURN_IF_ERROR(mode_.Finish(static_cast<std::uint64_t>(end)));
    if (env_.stop != nullptr) {
      // Flushed: the memory ranks can see this rank finished and join too.
      STALELEARN_RETURN_IF_ERROR(env_.stop->JoinAtEnd(end));
    }
  }
  result.end_clock = end;
  result.simulated_training_end = transport::ToSeconds(env_.wait.time->Now().time_since_epoch());
  result.train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count() - evaluating.count();
  if (evaluator_ != nullptr) {
    // Read while the memory ranks still progress (before any collective).
    final_model_ =
        eval_model.empty() ? model::MakeTableSet(env_.layout.tables(), /*touch_pages=*/false) : std::move(eval_model);
    const PhaseTimes::Scope timed = phases_.Time(LoopPhase::kFinalRead);
    STALELEARN_RETURN_IF_ERROR(mode_.ReadFinalModel(final_model_, evaluator_->rows()));
  }
  result.phases = phases_.Report();
  STALELEARN_RETURN_IF_ERROR(mode_.Release());
  return result;
}

}  // namespace stalelearn::runtime
