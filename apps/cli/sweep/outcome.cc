#include "apps/cli/sweep/outcome.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>

namespace stalelearn::cli::sweep {

std::string Target::ToString() const {
  if (!set) return "";
  return fmt::format("{}{:.9g}", at_least ? ">=" : "<=", value);
}

Result<Target> ParseTarget(std::string_view text, std::string_view metric) {
  Target target;
  target.metric = std::string(metric);
  if (text.empty()) return target;
  std::string_view number = text;
  if (text.starts_with("<=") || text.starts_with(">=")) {
    target.at_least = text[0] == '>';
    number = text.substr(2);
  }
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), target.value);
  if (ec != std::errc() || end != number.data() + number.size() || number.empty()) {
    return InvalidArgument(fmt::format("--target '{}': expected a number, '<=V' (loss) or '>=V' (accuracy)", text));
  }
  target.set = true;
  return target;
}

Result<RunOutcome> Summarize(const proto::Report& report, const Target& target) {
  RunOutcome out;
  const bool main_metric = target.metric.empty() || target.metric == report.final().metric();
  out.metric = main_metric ? report.final().metric() : target.metric;
  if (main_metric) {
    out.final_value = report.final().value();
  } else {
    const auto it = report.final().metrics().find(target.metric);
    if (it == report.final().metrics().end()) {
      return InvalidArgument(fmt::format("--metric {}: the report has no such metric (it has {}{})", target.metric,
                                         report.final().metric(),
                                         report.final().metrics().empty() ? "" : " and further ones"));
    }
    out.final_value = it->second;
  }

  std::map<int, std::string> role_of;
  std::int64_t clocks = 0;
  int compute_ranks = 0;
  for (const proto::RankReport& rank : report.ranks()) {
    role_of[rank.rank()] = rank.role();
    out.bytes_put += rank.bytes_put();
    out.bytes_get += rank.bytes_get();
    out.max_staleness = std::max(out.max_staleness, rank.max_observed_staleness());
    if (rank.role() != "compute") continue;
    ++compute_ranks;
    clocks = std::max(clocks, rank.clocks());
    out.stall_seconds += rank.stall_seconds();
  }
  if (compute_ranks > 0) out.stall_seconds /= compute_ranks;
  // Whole clocks per epoch (an app's initialisation clock, if any, is the remainder).
  if (report.epochs() > 0) out.clocks_per_epoch = clocks / report.epochs();
  out.wall_seconds = report.wall_seconds();

  if (report.has_simulated()) {
    out.simulated = true;
    out.deterministic = report.simulated().deterministic();
    out.sim_seconds = report.simulated().total_seconds();
    double compute = 0, transfer = 0, wait = 0, merge = 0;
    int n = 0;
    for (const proto::SimulatedRank& rank : report.simulated().ranks()) {
      if (role_of[rank.rank()] == "memory") {
        merge = std::max(merge, rank.merge_seconds());
        continue;
      }
      ++n;
      compute += rank.compute_seconds();
      transfer += rank.transfer_seconds();
      wait += rank.wait_seconds();
    }
    if (n > 0) {
      out.sim_compute = compute / n;
      out.sim_transfer = transfer / n;
      out.sim_wait = wait / n;
    }
    out.sim_merge = merge;
  }

  for (const proto::CurvePoint& point : report.curve()) {
    OutcomePoint p;
    p.epoch = point.epoch();
    p.clock = static_cast<std::int64_t>(point.epoch()) * out.clocks_per_epoch;
    if (main_metric) {
      p.metric_value = point.metric_value();
    } else {
      const auto it = point.metrics().find(target.metric);
      if (it == point.metrics().end()) continue;
      p.metric_value = it->second;
    }
    p.wall_seconds = point.wall_seconds();
    if (out.simulated) p.simulated_seconds = point.simulated_seconds();
    if (target.set && !out.epochs_to_target && target.ReachedBy(p.metric_value)) {
      out.epochs_to_target = p.epoch;
      out.clocks_to_target = p.clock;
      out.wall_seconds_to_target = p.wall_seconds;
      out.sim_seconds_to_target = p.simulated_seconds;
    }
    out.curve.push_back(p);
  }
  return out;
}

const char* RunStatusName(RunStatus status) {
  switch (status) {
    case RunStatus::kOk: return "ok";
    case RunStatus::kTimedOut: return "timeout";
    case RunStatus::kDiverged: return "diverged";
  }
  return "?";
}

RunOutcome FailedOutcome(RunStatus status, const Target& target, double seconds) {
  RunOutcome out;
  out.metric = target.metric;
  out.status = status;
  out.final_value = std::numeric_limits<double>::quiet_NaN();
  out.simulated = true;
  out.deterministic = true;
  out.wall_seconds = seconds;
  return out;
}

}  // namespace stalelearn::cli::sweep
