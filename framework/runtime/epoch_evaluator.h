// Evaluates the merged model at the end of an epoch on the evaluating rank,
// records the learning curve point (epoch, wall seconds since the start,
// metric) and prints the progress line.
// Not thread-safe (one rank's thread).
#pragma once

#include <chrono>
#include <vector>

#include "framework/metrics/progress.h"
#include "framework/proto/report.pb.h"
#include "framework/runtime/app.h"

namespace stalelearn::runtime {

class EpochEvaluator {
 public:
  EpochEvaluator(const App& app, const metrics::ProgressPrinter& progress, int epochs,
                 std::chrono::steady_clock::time_point start)
      : app_(app), progress_(progress), epochs_(epochs), start_(start) {}

  // Evaluates `model` as the state after epoch `epoch` (1-based).
  Evaluation Record(int epoch, const TableSet& model);
  const std::vector<proto::CurvePoint>& curve() const { return curve_; }
  double ElapsedSeconds() const;

 private:
  const App& app_;
  const metrics::ProgressPrinter& progress_;
  int epochs_;
  std::chrono::steady_clock::time_point start_;
  std::vector<proto::CurvePoint> curve_;
};

// Slows one compute rank down (training.straggler): after a clock's compute
// took d, sleeps (slowdown - 1) * d, so the rank computes `slowdown` times
// slower. Value type.
class Straggler {
 public:
  Straggler(double slowdown, bool is_me) : factor_(is_me && slowdown > 1 ? slowdown - 1 : 0) {}
  void Delay(std::chrono::nanoseconds compute_time) const;
  bool active() const { return factor_ > 0; }

 private:
  double factor_;
};

}  // namespace stalelearn::runtime
