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
  point.set_metric_value(e.value);
  curve_.push_back(point);
  progress_.Epoch(epoch, epochs_, e.metric, e.value, point.wall_seconds());
  return e;
}

void Straggler::Delay(std::chrono::nanoseconds compute_time) const {
  if (factor_ <= 0) return;
  std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<std::int64_t>(factor_ * compute_time.count())));
}

}  // namespace stalelearn::runtime
