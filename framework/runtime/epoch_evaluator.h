// Evaluates the merged model at the end of an epoch on the evaluating rank,
// records the learning curve point (epoch, wall seconds since the start,
// simulated seconds under the timing backend, metric) and prints the progress line.
// Not thread-safe (one rank's thread).
#pragma once

#include <chrono>
#include <vector>

#include "framework/metrics/progress.h"
#include "framework/proto/report.pb.h"
#include "framework/runtime/app.h"
#include "framework/runtime/compute_cost_sink.h"
#include "framework/transport/virtual_time.h"

namespace stalelearn::runtime {

class EpochEvaluator {
 public:
  // `sim`: the evaluating rank's simulated clock (timing backend), which
  // stamps each curve point's simulated_seconds; nullptr otherwise.
  EpochEvaluator(const App& app, const metrics::ProgressPrinter& progress, int epochs,
                 std::chrono::steady_clock::time_point start, const transport::SimulatedTime* sim = nullptr)
      : app_(app), progress_(progress), epochs_(epochs), start_(start), sim_(sim) {}

  // Evaluates `model` as the state after epoch `epoch` (1-based).
  Evaluation Record(int epoch, const TableSet& model);
  const std::vector<proto::CurvePoint>& curve() const { return curve_; }
  double ElapsedSeconds() const;

 private:
  const App& app_;
  const metrics::ProgressPrinter& progress_;
  int epochs_;
  std::chrono::steady_clock::time_point start_;
  const transport::SimulatedTime* sim_;
  std::vector<proto::CurvePoint> curve_;
};

// Slows one compute rank down (training.straggler): after a clock's compute
// took d, sleeps (slowdown - 1) * d, so the rank computes `slowdown` times
// slower. Under the timing backend it sleeps nothing: the compute work it
// charges is scaled by the slowdown instead. Value type.
class Straggler {
 public:
  Straggler(double slowdown, bool is_me) : factor_(is_me && slowdown > 1 ? slowdown - 1 : 0) {}
  void Delay(std::chrono::nanoseconds compute_time) const;
  bool active() const { return factor_ > 0; }
  // Ends a compute step that did `work` in `compute_time`: charges it to
  // `sink` (timing backend) scaled by the slowdown, or, without a sink,
  // sleeps the delay.
  void EndComputeStep(ComputeCostSink* sink, const WorkCounters& work, std::chrono::nanoseconds compute_time) const;

 private:
  double factor_;
};

}  // namespace stalelearn::runtime
