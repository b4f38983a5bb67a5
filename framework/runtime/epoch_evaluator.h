// Evaluates the model at the end of an epoch and records the learning curve
// point (epoch, wall seconds since the start, simulated seconds under the
// timing backend, metrics), printing the progress line. Two ways, as the app
// says (the EvaluatesInParts facet, app_facets.h):
//   - whole model: one compute rank evaluates everything; the curve is final;
//   - in parts: every compute rank evaluates its part and records the sums;
//     GatherReport adds the parts over ranks and lets the app combine them.
// Not thread-safe (one rank's thread). The app, progress printer, local
// state and simulated clock must outlive it.
#pragma once

#include <chrono>
#include <vector>

#include "framework/metrics/progress.h"
#include "framework/proto/report.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/app_facets.h"
#include "framework/transport/rank_time.h"

namespace stalelearn::runtime {

class EpochEvaluator {
 public:
  // `parts`: the run's EvaluatesInParts facet (AppFacets::ForRun), or
  // nullptr: this rank evaluates the whole model.
  // `info`/`state`: the evaluating rank and its local state (parts only).
  // `time`: the rank's time service, whose clock stamps each point's
  // simulated_seconds (0 in real time). `prints`: this rank prints
  // progress lines (in parts, rank 0's line shows its own part's metric).
  EpochEvaluator(const App& app, const EvaluatesInParts* parts, RankInfo info, const LocalState* state, bool prints,
                 const metrics::ProgressPrinter& progress, int epochs, std::chrono::steady_clock::time_point start,
                 const transport::RankTime& time);

  bool in_parts() const { return in_parts_ != nullptr; }
  // The rows of the model Record needs (ConsistencyMode::ReadModel): every
  // row (an empty span), or in parts that read ranges of some table
  // (EvaluatesInParts::PartRows), each table's range.
  model::ModelRows rows() const { return read_rows_; }
  // Whether rows() is every row: the model Record got is the whole model.
  bool reads_whole_model() const { return read_rows_.empty(); }
  // Evaluates `model` as the state after epoch `epoch` (1-based).
  // kFailedPrecondition "diverged: metric M is nan after epoch E (compute
  // rank R); table 'T' row X holds nan" when the metric is not finite: the
  // run must stop (non-zero exit), not report it as a result.
  [[nodiscard]] Status Record(int epoch, const TableSet& model);
  // Whole model: the curve (the last point is the final evaluation).
  const std::vector<proto::CurvePoint>& curve() const { return curve_; }
  // In parts: this rank's parts, one per Record.
  const std::vector<proto::EvalPart>& parts() const { return parts_; }
  double ElapsedSeconds() const;
  // The headline metric's name (after a Record).
  const std::string& metric() const { return metric_; }

 private:
  const App& app_;
  const EvaluatesInParts* in_parts_;  // the app's facet, or nullptr: whole model
  RankInfo info_;
  const LocalState* state_;
  bool prints_;
  const metrics::ProgressPrinter& progress_;
  int epochs_;
  std::chrono::steady_clock::time_point start_;
  const transport::RankTime& time_;
  std::vector<proto::CurvePoint> curve_;
  std::vector<proto::EvalPart> parts_;
  std::string metric_;
  std::vector<model::RowRange> part_rows_;    // in parts: the rows of each table this part reads
  std::vector<model::RowRange> digest_rows_;  // in parts: this rank's share of the checksum
  std::vector<model::RowRange> read_rows_;    // rows(): empty, or part_rows_
};

// A curve point for `e` (metric_value and the extra metrics).
proto::CurvePoint MakeCurvePoint(int epoch, double wall_seconds, double simulated_seconds, const Evaluation& e);

}  // namespace stalelearn::runtime
