// The compute-rank role under SSP (BSP with s = 0, ASP unbounded): the
// StaleLearn path. Per clock t:
//   1. if the replica lacks some other rank's clocks 0..t-s-1: wait until
//      they are merged (I1) and refresh the replica: newer snapshots + own
//      unmerged deltas (I2); otherwise keep computing on the replica,
//   3. run the app kernel on this clock's samples (straggler delay applied),
//   4. push the deltas of touched rows through the rings (backpressure, I5).
// Compute rank 0 also evaluates the merged model at each epoch end.
//
// Not thread-safe: the rank's main thread. The endpoints live in the trainer.
#pragma once

#include <chrono>
#include <memory>

#include "framework/model/replica.h"
#include "framework/runtime/compute_links.h"
#include "framework/runtime/epoch_evaluator.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/trainer_result.h"
#include "framework/sync/staleness_gate.h"

namespace stalelearn::runtime {

class SspTrainer {
 public:
  SspTrainer(const RankEnv& env, ComputeEndpoints endpoints, const DataPlaneGeometry& geometry,
             sync::StalenessBound bound, EpochEvaluator* evaluator);

  Result<TrainerResult> Run();
  // The final merged model (after Run), for the final evaluation.
  Status ReadFinalModel(TableSet& model) {
    return links_.ReadFinalModel(env_, static_cast<std::uint64_t>(schedule_.clocks_per_epoch()) *
                                           static_cast<std::uint64_t>(env_.config.training().epochs()),
                                 model);
  }
  // Ends this rank\'s use of the memory ranks (after ReadFinalModel, if any).
  Status Release() { return links_.Release(); }

 private:
  // Steps 1-2; returns the record of the clock so far.
  Result<ClockRecord> GateAndRefresh(std::int64_t clock);
  static std::int64_t ObservedStaleness(std::uint64_t clock, std::uint64_t min_merged_of_others);

  const RankEnv& env_;
  model::ComputeIndex me_;
  ComputeLinks links_;
  sync::StalenessGate gate_;
  SampleSchedule schedule_;
  Straggler straggler_;
  EpochEvaluator* evaluator_;  // null except on the evaluating rank
  model::Replica replica_;
  bool installed_ = false;                 // a snapshot has been installed
  std::uint64_t installed_min_merged_ = 0;  // slowest other rank's clocks in it
};

}  // namespace stalelearn::runtime
