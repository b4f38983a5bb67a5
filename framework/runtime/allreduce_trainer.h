// The ALLREDUCE baseline (what Horovod users run): every rank trains a full
// model copy on its share of the samples; after every clock the ranks sum
// their model deltas with the bootstrap's allreduce and all apply the sum
// (the sum of deltas is the average with the learning rate scaled by the
// number of ranks, Horovod's linear scaling rule; it matches what BSP merges).
// No memory ranks, no rings.
//
// Not thread-safe: the rank's main thread (the allreduce is collective).
#pragma once

#include <vector>

#include "framework/model/replica.h"
#include "framework/runtime/epoch_evaluator.h"
#include "framework/runtime/sample_schedule.h"
#include "framework/runtime/trainer_result.h"

namespace stalelearn::runtime {

class AllreduceTrainer {
 public:
  AllreduceTrainer(const RankEnv& env, EpochEvaluator* evaluator);

  Result<TrainerResult> Run();
  // The model after Run (identical on every rank).
  const TableSet& model() const { return replica_.tables(); }

 private:
  Status SumDeltas();
  // All-reduces the deltas (in virtual time too, under the timing backend).
  Status AllReduceDeltas();
  Status SumOverRanks();

  const RankEnv& env_;
  int me_;
  SampleSchedule schedule_;
  Straggler straggler_;
  EpochEvaluator* evaluator_;
  model::Replica replica_;
  model::TableSet base_;              // the agreed model after the last allreduce
  std::vector<float> float_deltas_;   // float tables, concatenated
  std::vector<double> int_deltas_;    // int tables (exact in double)
  std::vector<std::size_t> offsets_;  // [table] offset in its delta vector
};

}  // namespace stalelearn::runtime
