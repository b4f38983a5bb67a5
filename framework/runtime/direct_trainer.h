// The compute-rank role in DIRECT mode, the baseline StaleLearn's replication
// removes: no replica. For every mini-batch (samples_per_clock samples) the
// rank gets each row the samples touch from the memory ranks' latest
// snapshots (one get per row: fine-grained, divergent remote access), runs
// the kernel, puts the deltas back through the rings, and waits until the
// memory ranks have merged and published them (so the next mini-batch reads
// its own writes).
//
// Not thread-safe: the rank's main thread.
#pragma once

#include <memory>
#include <vector>

#include "framework/runtime/ssp_trainer.h"

namespace stalelearn::runtime {

class DirectTrainer {
 public:
  DirectTrainer(const RankEnv& env, ComputeEndpoints endpoints, const DataPlaneGeometry& geometry,
                EpochEvaluator* evaluator);

  Result<TrainerResult> Run();
  Status ReadFinalModel(TableSet& model) {
    return links_.ReadFinalModel(env_, static_cast<std::uint64_t>(schedule_.clocks_per_epoch()) *
                                           static_cast<std::uint64_t>(env_.config.training().epochs()),
                                 model);
  }
  // Ends this rank\'s use of the memory ranks (after ReadFinalModel, if any).
  Status Release() { return links_.Release(); }

 private:
  // Gets the rows `samples` touch into the scratch model.
  Status FetchRows(std::span<const std::int64_t> samples);
  // Waits until every memory rank's latest snapshot includes my last batch.
  Result<std::chrono::nanoseconds> WaitUntilMerged();

  const RankEnv& env_;
  model::ComputeIndex me_;
  ComputeLinks links_;
  std::vector<std::unique_ptr<sync::SnapshotReader>> readers_;  // [m]
  SampleSchedule schedule_;
  Straggler straggler_;
  EpochEvaluator* evaluator_;
  model::Replica scratch_;  // holds only the current mini-batch's rows
  std::vector<RowRef> rows_;
  std::vector<std::vector<sync::SnapshotReader::RowRead>> reads_;  // [m]
};

}  // namespace stalelearn::runtime
