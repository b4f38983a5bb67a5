#include "apps/cli/kernel_calibration.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

#include "apps/cli/sweep/process.h"
#include "framework/proto/report.pb.h"

namespace stalelearn::cli {
namespace {

namespace fs = std::filesystem;

// Training time a measurement aims at: long enough that start-up jitter and
// the timer do not matter, short enough for a calibration of a few apps.
constexpr double kTargetSeconds = 0.5;
constexpr int kMaxEpochs = 400;
constexpr int kRuns = 3;

struct OneRun {
  double seconds = 0;  // the compute rank's train_seconds less its stalls
  double samples = 0;
  std::string name;
};

Result<OneRun> RunOnce(const fs::path& config, const fs::path& scratch, int epochs) {
  const fs::path report = scratch / "kernel-report.json";
  const fs::path log = scratch / "kernel-train.log";
  std::error_code ec;
  fs::remove(report, ec);
  const std::vector<std::string> argv = {sweep::SelfExecutable().string(), "train", "--config", config.string(),
                                         "--ranks", "1:1", "--quiet", "--report", report.string(),
                                         "--set", fmt::format("training.epochs={}", epochs),
                                         "--set", fmt::format("training.eval_every_epochs={}", epochs),
                                         "--set", "backend.name=local"};
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
  OneRun run;
  run.name = parsed.name();
  for (const proto::RankReport& rank : parsed.ranks()) {
    if (rank.role() != "compute") continue;
    run.seconds = rank.train_seconds() - rank.stall_seconds();
    run.samples = static_cast<double>(rank.samples());
  }
  if (!(run.seconds > 0) || !(run.samples > 0)) {
    return InvalidArgument(fmt::format("calibrate --config {}: the run trained no samples", config.string()));
  }
  fs::remove(report, ec);
  fs::remove(log, ec);
  return run;
}

}  // namespace

Result<KernelCalibration> MeasureKernel(const fs::path& config, const fs::path& scratch, bool quick) {
  int epochs = 1;
  STALELEARN_ASSIGN_OR_RETURN(OneRun run, RunOnce(config, scratch, epochs));
  int runs = 1;
  if (!quick) {
    // Long enough to time: the same config for more epochs; the median of
    // three runs (this kind of VM swings by a third from run to run).
    if (run.seconds < kTargetSeconds) {
      epochs = std::clamp(static_cast<int>(std::ceil(kTargetSeconds / run.seconds)), 2, kMaxEpochs);
    }
    std::vector<OneRun> timed;
    for (runs = 0; runs < kRuns; ++runs) {
      STALELEARN_ASSIGN_OR_RETURN(OneRun one, RunOnce(config, scratch, epochs));
      timed.push_back(one);
    }
    std::ranges::sort(timed, {}, [](const OneRun& r) { return r.seconds / r.samples; });
    run = timed[timed.size() / 2];
  }
  KernelCalibration k;
  k.config_name = run.name;
  k.ns_per_sample = {run.seconds / run.samples * 1e9,
                     fmt::format("the compute rank's clock loop less its stalls (report train_seconds - "
                                 "stall_seconds, {:.3f} s) over its {:.0f} samples, the median of {} runs of: "
                                 "stalelearn train --config {} --ranks 1:1 --set training.epochs={} (local backend)",
                                 run.seconds, run.samples, runs, config.string(), epochs)};
  return k;
}

proto::ComputePreset KernelPresetOf(const HostCalibration& host, const KernelCalibration& kernel,
                                    const std::string& name, const std::string& source_prefix) {
  proto::ComputePreset p = ComputePresetOf(host, name, source_prefix);
  p.set_description(fmt::format("one core of this machine running '{}' (its step measured), {}", kernel.config_name,
                                source_prefix));
  *p.mutable_kernel()->mutable_ns_per_sample() = QuantityOf(kernel.ns_per_sample, source_prefix);
  return p;
}

}  // namespace stalelearn::cli
