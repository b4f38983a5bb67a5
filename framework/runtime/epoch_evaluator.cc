#include "framework/runtime/epoch_evaluator.h"

#include <thread>

namespace stalelearn::runtime {

double EpochEvaluator::ElapsedSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

Evaluation EpochEvaluator::Record(int epoch, const TableSet& model) {
  Evaluation e = app_.Evaluate(model);
  proto::CurvePoint point;
  point.set_epoch(epoch);
  point.set_wall_seconds(ElapsedSeconds());
  if (sim_ != nullptr) point.set_simulated_seconds(transport::ToSeconds(sim_->Now().time_since_epoch()));
  point.set_metric_value(e.value);
  curve_.push_back(point);
  progress_.Epoch(epoch, epochs_, e.metric, e.value, point.wall_seconds());
  return e;
}

void Straggler::Delay(std::chrono::nanoseconds compute_time) const {
  if (factor_ <= 0) return;
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(factor_ * compute_time.count())));
}

void Straggler::EndComputeStep(ComputeCostSink* sink, const WorkCounters& work,
                               std::chrono::nanoseconds compute_time) const {
  if (sink == nullptr) {
    Delay(compute_time);
    return;
  }
  const double scale = 1 + factor_;
  WorkCounters slowed = work;
  slowed.flops *= scale;
  slowed.bytes *= scale;
  slowed.random_row_accesses = static_cast<std::int64_t>(static_cast<double>(work.random_row_accesses) * scale);
  sink->ChargeCompute(slowed);
}

}  // namespace stalelearn::runtime
