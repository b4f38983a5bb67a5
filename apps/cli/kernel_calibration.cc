#include "apps/cli/kernel_calibration.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "apps/cli/sweep/process.h"
#include "framework/proto/report.pb.h"

namespace stalelearn::cli {
namespace {

namespace fs = std::filesystem;

// Training time a measurement aims at: long enough that start-up jitter and
// the timer do not matter, short enough for a calibration of a few apps.
constexpr double kTargetSeconds = 1.0;
constexpr int kMaxEpochs = 400;
constexpr int kRuns = 3;
// 1-epoch runs are short and swing more: their median of more runs.
constexpr int kShortRuns = 5;

struct OneRun {
  double seconds = 0;  // the compute rank's train_seconds less its stalls and refreshes
  double samples = 0;
  std::string name;
};

// Runs `config` for real (local backend) on `ranks` for `epochs` with `sets`,
// and returns its report.
Result<proto::Report> Train(const fs::path& config, const fs::path& scratch, const std::string& ranks, int epochs,
                            const std::vector<std::string>& sets) {
  const fs::path report = scratch / "kernel-report.json";
  const fs::path log = scratch / "kernel-train.log";
  std::error_code ec;
  fs::remove(report, ec);
  std::vector<std::string> argv = {sweep::SelfExecutable().string(), "train", "--config", config.string(),
                                   "--ranks", ranks, "--quiet", "--report", report.string(),
                                   "--set", fmt::format("training.epochs={}", epochs),
                                   "--set", fmt::format("training.eval_every_epochs={}", epochs),
                                   "--set", "backend.name=local"};
  for (const std::string& set : sets) {
    argv.push_back("--set");
    argv.push_back(set);
  }
  STALELEARN_ASSIGN_OR_RETURN(const int code, sweep::RunProcess(argv, log));
  if (code != 0) {
    return InvalidArgument(fmt::format("calibrate --config {}: the training run failed (exit {}): {}", config.string(),
                                       code, sweep::LastLine(log)));
  }
  std::ifstream in(report);
  std::stringstream json;
  json << in.rdbuf();
  proto::Report parsed;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(json.str(), &parsed, options).ok()) {
    return Internal(fmt::format("calibrate --config {}: cannot read its report {}", config.string(), report.string()));
  }
  fs::remove(report, ec);
  fs::remove(log, ec);
  return parsed;
}

Result<OneRun> RunOnce(const fs::path& config, const fs::path& scratch, int epochs) {
  STALELEARN_ASSIGN_OR_RETURN(const proto::Report parsed, Train(config, scratch, "1:1", epochs, {}));
  OneRun run;
  run.name = parsed.name();
  for (const proto::RankReport& rank : parsed.ranks()) {
    if (rank.role() != "compute") continue;
    // Refreshes are priced by the rows they install (ns_per_row_refreshed):
    // left out here, as under a merge that is not master += delta (adagrad,
    // adam) even one compute rank refreshes its own rows.
    run.seconds = rank.train_seconds() - rank.stall_seconds() - rank.refresh_cpu_seconds();
    run.samples = static_cast<double>(rank.samples());
  }
  if (!(run.seconds > 0) || !(run.samples > 0)) {
    return InvalidArgument(fmt::format("calibrate --config {}: the run trained no samples", config.string()));
  }
  return run;
}

// The median, by seconds per sample, of `runs` runs of `epochs` (this kind
// of VM swings by a third from run to run); `first` counts as one if given.
Result<OneRun> MedianRun(const fs::path& config, const fs::path& scratch, int epochs, int runs,
                         std::optional<OneRun> first = std::nullopt) {
  std::vector<OneRun> timed;
  if (first) timed.push_back(*first);
  while (static_cast<int>(timed.size()) < runs) {
    STALELEARN_ASSIGN_OR_RETURN(OneRun one, RunOnce(config, scratch, epochs));
    timed.push_back(one);
  }
  std::ranges::sort(timed, {}, [](const OneRun& r) { return r.seconds / r.samples; });
  return timed[timed.size() / 2];
}

// What a run's report says of its data plane, summed over its ranks.
struct DataPlaneTotals {
  double refresh_cpu = 0, busy_cpu = 0, merge_bytes = 0, samples = 0;
  std::int64_t refreshed = 0, rows = 0;
};

DataPlaneTotals Totals(const proto::Report& report) {
  DataPlaneTotals t;
  for (const proto::RankReport& rank : report.ranks()) {
    t.refresh_cpu += rank.refresh_cpu_seconds();
    t.refreshed += rank.rows_refreshed();
    t.busy_cpu += rank.busy_cpu_seconds();
    t.rows += rank.rows_merged();
    t.samples += static_cast<double>(rank.samples());
    t.merge_bytes += static_cast<double>(rank.bytes_merged()) + 8.0 * static_cast<double>(rank.element_updates());
  }
  return t;
}

// A cost measured over a long run and a short one (its first epoch): the
// steady cost per unit (the difference over the difference) and what the
// short run cost beyond it (its warm-up). Both must be > 0 to mean anything.
struct Split {
  double steady = 0;
  double extra = 0;
};

Split SplitWarmup(double long_cost, double long_units, double short_cost, double short_units) {
  const double steady = (long_cost - short_cost) / (long_units - short_units);
  return {steady, short_cost - steady * short_units};
}

}  // namespace

Result<KernelCalibration> MeasureKernel(const fs::path& config, const fs::path& scratch, bool quick) {
  STALELEARN_ASSIGN_OR_RETURN(const OneRun first, RunOnce(config, scratch, 1));
  KernelCalibration k;
  k.config_name = first.name;
  const std::string command = fmt::format("stalelearn train --config {} --ranks 1:1", config.string());
  if (quick) {
    k.ns_per_sample = {first.seconds / first.samples * 1e9,
                       fmt::format("the compute rank's clock loop less its stalls and refreshes (report "
                                   "train_seconds - stall_seconds - refresh_cpu_seconds, {:.3f} s) over its {:.0f} "
                                   "samples, one run of: {} --set training.epochs=1 (local backend)",
                                   first.seconds, first.samples, command)};
    return k;
  }
  // Long enough to time (about kTargetSeconds), and one epoch: the steady
  // rate is the difference between them, the first epoch's warm-up what one
  // epoch costs beyond it.
  k.epochs = std::clamp(static_cast<int>(std::ceil(kTargetSeconds / first.seconds)), 2, kMaxEpochs);
  STALELEARN_ASSIGN_OR_RETURN(const OneRun one, MedianRun(config, scratch, 1, kShortRuns, first));
  STALELEARN_ASSIGN_OR_RETURN(const OneRun many, MedianRun(config, scratch, k.epochs, kRuns));
  const std::string timed = fmt::format(
      "the compute rank's clock loop less its stalls and refreshes (report train_seconds - stall_seconds - "
      "refresh_cpu_seconds), the median of {} runs "
      "of: {} --set training.epochs=E (local backend) for E = 1 ({:.3f} s, {:.0f} samples) and of {} for E = {} "
      "({:.3f} s, {:.0f} samples)",
      kShortRuns, command, one.seconds, one.samples, kRuns, k.epochs, many.seconds, many.samples);
  const Split split = SplitWarmup(many.seconds, many.samples, one.seconds, one.samples);
  if (!(split.steady > 0) || !(split.extra > 0)) {
    // No warm-up to see (or noise swallowed the difference): the longer
    // runs' average, as a first epoch costs what the others do.
    k.ns_per_sample = {many.seconds / many.samples * 1e9, "over the samples of the longer runs: " + timed};
    return k;
  }
  k.ns_per_sample = {split.steady * 1e9, "the difference in seconds over the difference in samples: " + timed};
  k.first_epoch_ns_per_sample = Measured{split.extra / one.samples * 1e9,
                                         "the 1-epoch runs' seconds per sample less the steady rate "
                                         "(ns_per_sample): " + timed};
  return k;
}

Result<DataPlaneCalibration> MeasureDataPlane(const fs::path& config, const fs::path& scratch, int epochs,
                                              double sum_merge_gb_per_s) {
  // Two compute ranks: each refreshes the rows the other wrote. The sum
  // merge whatever the config says: the merge kernel's share is then what
  // the cached sum preset prices, and the rest is the host path.
  const std::string ranks = "2:1";
  const std::vector<std::string> sum = {"merge.*.policy=sum"};
  STALELEARN_ASSIGN_OR_RETURN(const proto::Report report, Train(config, scratch, ranks, epochs, sum));
  const DataPlaneTotals t = Totals(report);
  if (t.refreshed <= 0 || t.rows <= 0) {
    return InvalidArgument(fmt::format("calibrate --config {}: the {} run refreshed or merged no rows", config.string(),
                                       ranks));
  }
  const std::string run = fmt::format("stalelearn train --config {} --ranks {} --set training.epochs={} --set "
                                      "merge.*.policy=sum (local backend)",
                                      config.string(), ranks, epochs);
  DataPlaneCalibration d;
  d.ns_per_row_refreshed = {t.refresh_cpu / static_cast<double>(t.refreshed) * 1e9,
                            fmt::format("the compute ranks' refresh thread CPU ({:.4f} s, report refresh_cpu_seconds) "
                                        "over the {} rows they installed, one run of: {}",
                                        t.refresh_cpu, t.refreshed, run)};
  if (epochs > 1) {
    // Refreshes of the first epoch cost more a row (first touches of the
    // replica and the snapshot log): 1-epoch runs (the median of kRuns)
    // against the long run give the steady cost a row and the first epoch's
    // extra, charged per first-epoch sample with the kernel's warm-up.
    std::vector<DataPlaneTotals> short_runs;
    for (int k = 0; k < kRuns; ++k) {
      STALELEARN_ASSIGN_OR_RETURN(const proto::Report one, Train(config, scratch, ranks, 1, sum));
      short_runs.push_back(Totals(one));
    }
    std::ranges::sort(short_runs, {},
                      [](const DataPlaneTotals& r) { return r.refresh_cpu / std::max(1.0, r.samples); });
    const DataPlaneTotals& one = short_runs[short_runs.size() / 2];
    if (t.refreshed > one.refreshed && one.samples > 0) {
      const Split split = SplitWarmup(t.refresh_cpu, static_cast<double>(t.refreshed), one.refresh_cpu,
                                      static_cast<double>(one.refreshed));
      if (split.steady > 0 && split.extra > 0) {
        const std::string how = fmt::format(
            "the compute ranks' refresh thread CPU and rows installed in 1-epoch runs (the median of {}: {:.4f} s, {} "
            "rows, {:.0f} samples) against one run of {} epochs ({:.4f} s, {} rows): {}",
            kRuns, one.refresh_cpu, one.refreshed, one.samples, epochs, t.refresh_cpu, t.refreshed, run);
        d.ns_per_row_refreshed = {split.steady * 1e9, "the difference in CPU over the difference in rows: " + how};
        d.first_epoch_refresh_ns_per_sample =
            Measured{split.extra / one.samples * 1e9, "the 1-epoch runs' refresh CPU beyond the steady cost a row, "
                                                      "over their samples: " + how};
      }
    }
  }
  const double merge_seconds = t.merge_bytes / (sum_merge_gb_per_s * 1e9);
  // At least 1 ns: the path exists even where the estimate of the merge's
  // share swallows it (a measured 0 would read as "free").
  d.host_path_ns_per_row = {std::max(1.0, (t.busy_cpu - merge_seconds) / static_cast<double>(t.rows) * 1e9),
                            fmt::format("the memory rank's thread CPU consuming, merging and publishing ({:.4f} s, "
                                        "report busy_cpu_seconds) less its merges priced by the cached sum preset "
                                        "({:.4f} s), over the {} row deltas it merged, one run of: {}",
                                        t.busy_cpu, merge_seconds, t.rows, run)};
  return d;
}

proto::ComputePreset KernelPresetOf(const HostCalibration& host, const KernelCalibration& kernel,
                                    const std::string& name, const std::string& source_prefix) {
  proto::ComputePreset p = ComputePresetOf(host, name, source_prefix);
  p.set_description(fmt::format("one core of this machine running '{}' (its step measured), {}", kernel.config_name,
                                source_prefix));
  proto::KernelCost& cost = *p.mutable_kernel();
  *cost.mutable_ns_per_sample() = QuantityOf(kernel.ns_per_sample, source_prefix);
  // The first epoch's warm-up: the kernel's (1:1) and its refreshes' (2:1).
  std::optional<Measured> warmup = kernel.first_epoch_ns_per_sample;
  if (kernel.data_plane && kernel.data_plane->first_epoch_refresh_ns_per_sample) {
    const Measured& refresh = *kernel.data_plane->first_epoch_refresh_ns_per_sample;
    warmup = warmup ? Measured{warmup->value + refresh.value,
                               fmt::format("the kernel's {:.1f} ns ({}) plus the refreshes' {:.1f} ns ({})",
                                           warmup->value, warmup->method, refresh.value, refresh.method)}
                    : refresh;
  }
  if (warmup) *cost.mutable_first_epoch_ns_per_sample() = QuantityOf(*warmup, source_prefix);
  if (kernel.data_plane) {
    *cost.mutable_ns_per_row_refreshed() = QuantityOf(kernel.data_plane->ns_per_row_refreshed, source_prefix);
  }
  return p;
}

}  // namespace stalelearn::cli
