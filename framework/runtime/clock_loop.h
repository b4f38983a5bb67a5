// The one clock loop every consistency mode runs on a compute rank:
//
//   [initialisation: InitializesFromData -> mode.ShareInitialization]
//   for each epoch, for each clock t:
//     mode.BeforeClock(t)         SSP: gate + refresh; DIRECT: fetch rows
//     app.UpdateBatch(samples)    on mode.view(), with a KernelContext
//     charge work / straggle      (timing backend / training.straggler)
//     mode.AfterClock(t)          push; push + wait; allreduce
//   at epoch ends: mode.ReadModel -> evaluate (whole model or this rank's part)
//   mode.Finish; [mode.ReadFinalModel -> evaluate]; mode.Release
//
// A stop (stop_agreement.h) ends the loop at the top of the agreed clock C,
// the same on every rank; Finish(C) and the final read follow as at the end.
//
// Not thread-safe: the compute rank's main thread. The environment, mode,
// schedule and evaluator must outlive it.
#pragma once

#include <chrono>
#include <memory>

#include "framework/runtime/app_facets.h"
#include "framework/runtime/consistency_mode.h"
#include "framework/runtime/early_stopping.h"
#include "framework/runtime/epoch_evaluator.h"
#include "framework/runtime/eval_parts_exchange.h"
#include "framework/runtime/locality_plan.h"
#include "framework/runtime/parallel_kernel.h"
#include "framework/runtime/phase_times.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/straggler.h"
#include "framework/runtime/trainer_result.h"

namespace stalelearn::runtime {

class ClockLoop {
 public:
  // `evaluator`: null unless this rank evaluates (the whole model on compute
  // rank 0, or every compute rank when the app evaluates in parts).
  // `schedule`: the rank's samples (ScheduleOf), owned by the caller.
  ClockLoop(const RankEnv& env, RankInfo info, ConsistencyMode& mode, const SampleSchedule& schedule);

  // Creates the rank's local state; call before Run (the evaluator may need it).
  const LocalState* local_state() const { return state_.get(); }
  LocalState* mutable_local_state() { return state_.get(); }
  // Resuming from a checkpoint of protocol clock `clock` (checkpointer.h):
  // the initialisation and the clocks before it are skipped, evaluations
  // from its epoch's end on happen as in the uninterrupted run.
  void set_first_clock(std::int64_t clock) { first_clock_ = clock; }
  void set_evaluator(EpochEvaluator* evaluator) { evaluator_ = evaluator; }
  // The evaluating rank (whole model): each evaluation during the run is
  // shown to `early`; when its patience runs out the rank asks the stop
  // agreement for a stop (kEarlyStopRequest).
  void set_early_stopping(EarlyStopping* early) { early_ = early; }
  // Apps that evaluate in parts, with early stopping: every evaluation's part
  // goes to compute rank 0, which takes the parts at each clock's top and
  // asks for the stop (eval_parts_exchange.h).
  void set_parts_exchange(EvalPartsExchange* parts) { parts_ = parts; }
  // After Run: the error early stopping met (a metric the app does not
  // report), which stopped the run at an agreed clock; Ok otherwise.
  const Status& early_stopping_error() const { return early_error_; }

  // Trains every epoch, then finishes: after Run, `final_model()` holds the
  // final model if this rank evaluates, and the memory ranks are released.
  Result<TrainerResult> Run();
  const TableSet& final_model() const { return final_model_; }

 private:
  Status Initialize();
  // At the top of `clock`: true when the run's stop agreement says every
  // rank stops here (joins it first if a stop was asked for).
  Result<bool> StopsBefore(std::int64_t clock);
  // Early stopping's verdict on an evaluation (or the error it met): asks
  // the stop agreement for a stop when the patience ran out.
  Status OnEarlyStopping(Result<bool> exhausted);
  // The app's kernel on the clock's samples: on threads_per_rank threads when the app allows it.
  void RunKernel(std::span<const std::int64_t> samples, KernelContext& context);
  // Compute rank 0, after a clock: a progress line within the epoch when
  // output.progress_seconds have passed since the last line.
  void MaybeReportProgress(int epoch, int epochs, std::int64_t clocks_done, std::int64_t clocks_per_epoch);

  const RankEnv& env_;
  AppFacets facets_;  // the app's, found once
  RankInfo info_;
  ConsistencyMode& mode_;
  const SampleSchedule& schedule_;
  LocalityPlan plan_;
  LocalityPlan::EpochCells epoch_cells_;      // planned: the epoch's order, as cells
  std::vector<std::int64_t> clock_samples_;  // planned: the clock's samples (capacity reused)
  LocalityPlan::Focus focus_;  // the stripe the mode was last told about (stratified)
  Straggler straggler_;
  PhaseTimes phases_;  // where the loop's time goes (TrainerResult::phases)
  std::unique_ptr<LocalState> state_;
  std::unique_ptr<ParallelKernel> parallel_;  // null: the kernel runs on the trainer thread
  EpochEvaluator* evaluator_ = nullptr;
  EarlyStopping* early_ = nullptr;
  EvalPartsExchange* parts_ = nullptr;
  Status early_error_;
  std::int64_t clock_offset_;  // 1 when clock 0 carries the data-dependent initialisation
  int first_epoch_ = -1;        // the first epoch this run trains a clock of (its warm-up: WorkCounters)
  TableSet final_model_;
  TableSet hook_model_;  // RuntimeHooks::after_refresh only
  std::int64_t first_clock_ = 0;  // > 0 when resumed
  std::chrono::steady_clock::time_point started_, last_progress_;  // Run's start, the last progress line
};

}  // namespace stalelearn::runtime
