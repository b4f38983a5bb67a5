// Early stopping for apps that evaluate in parts (app_facets.h:
// EvaluatesInParts): every compute rank sends its part of each evaluation to
// compute rank 0 (Bootstrap::SendMessage: no collective, nobody waits), which
// adds the parts of an evaluation once all arrived, in compute-rank order as
// GatherReport does (so the value is the report's curve point to the bit),
// and shows the whole evaluation to its EarlyStopping, evaluations in order.
// Compute rank 0 takes what arrived at the top of each clock and after its
// own evaluations (only in runs with early stopping: the others pay one send
// per evaluation), and when its patience runs out asks the stop agreement for
// a stop as the whole-model evaluator does. After the final evaluation it
// waits for the parts still on their way, so the best covers every
// evaluation, the final one included.
//
// The best's model is compute rank 0's read of the model for that evaluation
// (its checksum, and its copy when the best model is written); the other
// ranks scored their parts on their own reads at the same epoch's end, which
// under asynchronous modes (SSP, ASP) may hold a few more or fewer of the
// other ranks' clocks. App local state (HasLocalState) is not part of it.
//
//   EvalPartsExchange parts(bootstrap, roles.compute_rank(ComputeIndex{0}), me, compute_ranks, *facets.parts);
//   parts.set_early_stopping(&early);                 // compute rank 0 only
//   STALELEARN_RETURN_IF_ERROR(parts.Share(part, model));   // after each evaluation
//   STALELEARN_ASSIGN_OR_RETURN(bool stop, parts.Poll());    // rank 0: at clock tops
//
// Not thread-safe: the compute rank's main thread (the bootstrap's rules).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/status.h"
#include "framework/model/rank_index.h"
#include "framework/proto/report.pb.h"
#include "framework/runtime/app_facets.h"
#include "framework/runtime/early_stopping.h"
#include "framework/transport/bootstrap.h"

namespace stalelearn::runtime {

class EvalPartsExchange {
 public:
  // `decider`: compute rank 0's world rank; `me`: this rank's compute index.
  EvalPartsExchange(transport::Bootstrap& bootstrap, transport::Rank decider, model::ComputeIndex me,
                    int compute_ranks, const EvaluatesInParts& combiner)
      : bootstrap_(bootstrap), decider_(decider), me_(me), compute_ranks_(compute_ranks), combiner_(combiner) {}

  bool decides() const { return me_.value == 0; }
  // Compute rank 0: the early stopping the whole evaluations are shown to.
  void set_early_stopping(EarlyStopping* early) { early_ = early; }

  // Every compute rank, after each evaluation (part.final() for the one
  // after training): sends its part to compute rank 0, which keeps its own
  // with `model`'s checksum (and a copy when the best model is kept).
  Status Share(proto::EvalPart part, const TableSet& model);
  // Compute rank 0: takes the parts that arrived and shows every complete
  // evaluation to the early stopping, in order. True when its patience ran
  // out at one of them (once); kInvalidArgument for a metric the app does
  // not report (the run must still stop at an agreed clock).
  Result<bool> Poll();
  // Compute rank 0, after its final evaluation: Poll until every
  // evaluation it made is complete (the other ranks sent theirs before the
  // run's last barrier), or kTimeout after `timeout`.
  Status AwaitAll(std::chrono::nanoseconds timeout);

 private:
  struct Pending {
    std::vector<std::optional<proto::EvalPart>> parts;  // by compute index
    int arrived = 0;
    std::optional<std::string> checksum;  // compute rank 0's read of the model
    std::optional<TableSet> model;        // its copy, when the best model is kept
  };
  // Final evaluations after every evaluation during the run; by epoch.
  using Key = std::pair<bool, int>;
  Status Add(proto::EvalPart part);
  Pending& At(const proto::EvalPart& part);

  transport::Bootstrap& bootstrap_;
  transport::Rank decider_;
  model::ComputeIndex me_;
  int compute_ranks_;
  const EvaluatesInParts& combiner_;
  EarlyStopping* early_ = nullptr;
  std::map<Key, Pending> pending_;  // compute rank 0: evaluations not yet complete
};

}  // namespace stalelearn::runtime
