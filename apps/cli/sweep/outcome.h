// What a sweep takes from one run's report (framework/proto/report.proto):
// the final metric, when the run first reached the target (epoch, clock,
// simulated and wall seconds), its time and the simulated breakdown, bytes.
//
//   Target target = ValueOrThrow(ParseTarget("<=0.90", ""));
//   RunOutcome outcome = ValueOrThrow(Summarize(report, target));
//
// Value types; stateless functions, safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "framework/proto/report.pb.h"

namespace stalelearn::cli::sweep {

// "Metric reached V": "<=V" (a loss: RMSE, log-loss; a bare number means
// this), ">=V" (accuracy). `metric` names the curve metric to follow (the
// report's main metric when empty, else one of the app's further metrics).
struct Target {
  bool set = false;
  bool at_least = false;  // ">="
  double value = 0;
  std::string metric;
  bool ReachedBy(double metric_value) const { return at_least ? metric_value >= value : metric_value <= value; }
  std::string ToString() const;  // "" when not set, else "<=0.9"
};

Result<Target> ParseTarget(std::string_view text, std::string_view metric);

struct OutcomePoint {
  int epoch = 0;
  std::int64_t clock = 0;
  double metric_value = 0;
  double wall_seconds = 0;
  std::optional<double> simulated_seconds;
};

// How a run ended: with a report, stopped by the sweep's --run-timeout, or
// failed with a diverged model (train's "diverged: ..." error, a NaN or
// infinity). The last two have no report: every metric is missing.
enum class RunStatus { kOk, kTimedOut, kDiverged };
const char* RunStatusName(RunStatus status);  // "ok", "timeout", "diverged"

struct RunOutcome {
  std::string metric;  // the metric followed
  RunStatus status = RunStatus::kOk;
  double final_value = 0;
  bool simulated = false;
  bool deterministic = false;  // simulated in deterministic emulation
  std::int64_t clocks_per_epoch = 0;
  std::optional<int> epochs_to_target;
  std::optional<std::int64_t> clocks_to_target;
  std::optional<double> sim_seconds_to_target;
  std::optional<double> wall_seconds_to_target;
  double wall_seconds = 0;
  std::optional<double> sim_seconds;  // makespan
  // Simulated breakdown: mean over compute ranks of compute, transfer and
  // wait; merge: the busiest memory rank's merge seconds.
  std::optional<double> sim_compute, sim_transfer, sim_merge, sim_wait;
  double stall_seconds = 0;  // mean over compute ranks (wall clock)
  std::int64_t bytes_put = 0, bytes_get = 0;  // all ranks
  int max_staleness = 0;
  std::vector<OutcomePoint> curve;
};

// kInvalidArgument when the target names a metric the report's curve lacks.
Result<RunOutcome> Summarize(const proto::Report& report, const Target& target);

// The outcome of a run without a report (timed out after `seconds`, or
// diverged): no final value (NaN), never at the target. Marked simulated
// and deterministic, so that one such run does not turn a simulated sweep's
// tables to wall clock.
RunOutcome FailedOutcome(RunStatus status, const Target& target, double seconds);

}  // namespace stalelearn::cli::sweep
