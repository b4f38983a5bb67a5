#include "framework/runtime/epoch_evaluator.h"

#include <thread>

namespace stalelearn::runtime {

double EpochEvaluator::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

proto::CurvePoint MakeCurvePoint(int epoch, double wall_seconds, double simulated_seconds, const Evaluation& e) {
  proto::CurvePoint point;
  point.set_epoch(epoch);
  point.set_wall_seconds(wall_seconds);
  point.set_simulated_seconds(simulated_seconds);
  point.set_metric_value(e.value);
  for (const auto& [name, value] : e.extra) (*point.mutable_metrics())[name] = value;
  return point;
}

void EpochEvaluator::Record(int epoch, const TableSet& model) {
  const double wall = ElapsedSeconds();
  const double simulated = sim_ != nullptr ? transport::ToSeconds(sim_->Now().time_since_epoch()) : 0.0;
  if (!in_parts()) {
    const Evaluation e = app_.Evaluate(model);
    metric_ = e.metric;
    curve_.push_back(MakeCurvePoint(epoch, wall, simulated, e));
    if (prints_) progress_.Epoch(epoch, epochs_, e.metric, e.value, wall);
    return;
  }
  proto::EvalPart part;
  part.set_epoch(epoch);
  part.set_wall_seconds(wall);
  part.set_simulated_seconds(simulated);
  const std::vector<double> sums = app_.EvaluatePart(model, EvalContext{info_, state_});
  *part.mutable_sums() = {sums.begin(), sums.end()};
  parts_.push_back(part);
  const Evaluation mine = app_.CombineParts(sums);
  metric_ = mine.metric;
  if (prints_) {
    progress_.Epoch(epoch, epochs_, mine.metric + " (rank 0's part)", mine.value, wall);
  }
}

}  // namespace stalelearn::runtime
