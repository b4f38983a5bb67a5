// `stalelearn sweep --config BASE --grid field=v1,v2,... [--grid ...] --out DIR`
//
// Runs `stalelearn train` once per point of the grid (the cartesian product
// of the --grid fields, `--set` syntax) and repeat, each as a child process
// (ranks as threads with --launch local, or under mpirun), saves each report
// as DIR/runs/<name>/report.json, and writes the tables and plots
// (sweep/tables.h, sweep/plots.h). Resumable: a run whose report exists is
// not run again; a report is renamed into place only after its run exited
// 0, so an interrupted run never counts. With --run-timeout a run past it
// is stopped and recorded as timed out (status 'timeout' in results.csv),
// a run whose model diverged as 'diverged'; the sweep goes on. DIR/sweep-base.txt records the base
// config, --set and launch: another base in the same DIR is an error. Every point's config is loaded and
// checked before the first run starts: a bad field or value is one line and
// exit code 2.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/cli/commands.h"
#include "apps/cli/sweep/grid.h"
#include "apps/cli/sweep/outcome.h"
#include "apps/cli/sweep/plots.h"
#include "apps/cli/sweep/process.h"
#include "apps/cli/sweep/tables.h"
#include "backends/builtin.h"
#include "backends/timing/presets.h"
#include "backends/timing/timing_options.h"
#include "framework/core/config_loader.h"
#include "framework/core/error.h"
#include "framework/metrics/report_writer.h"

namespace stalelearn::cli {
namespace {

namespace fs = std::filesystem;
using sweep::GridRun;

struct SweepOptions {
  std::string config_path;
  std::vector<std::string> grid;
  std::vector<std::string> sets;
  int repeats = 1;
  std::string repeat_seed = "training.straggler.seed";
  std::string launch = "local";
  std::string ranks = "3:1";
  int np = 4;
  std::string target;
  std::string metric;
  std::string baseline;
  std::string out;
  double run_timeout = 0;  // seconds; 0: none
  bool no_plots = false;
  bool quiet = false;
};

std::vector<std::string> RunOverrides(const SweepOptions& options, const GridRun& run) {
  std::vector<std::string> overrides = options.sets;
  overrides.insert(overrides.end(), run.overrides.begin(), run.overrides.end());
  return overrides;
}

// Loads every run's config as `train` would, so that a bad field or value
// fails before anything runs.
void CheckRuns(const SweepOptions& options, const std::vector<GridRun>& runs, const runtime::Registries& registries) {
  const config::ConfigSchema schema = ValueOrThrow(registries.Schema());
  for (const GridRun& run : runs) {
    const std::vector<std::string> overrides = RunOverrides(options, run);
    Result<proto::Config> loaded = config::LoadConfig(options.config_path, overrides, schema);
    if (!loaded.ok()) throw Error(loaded.status());
    proto::Config config = *std::move(loaded);
    ThrowIfError(registries.modes.Find(config.consistency().mode()).status());
    if (config.backend().name().empty()) config.mutable_backend()->set_name(options.launch == "local" ? "local" : "ucx");
    if (!registries.backends.Contains(config.backend().name())) {
      throw Error(InvalidArgument(fmt::format("backend.name: unknown backend '{}' (backends: {})",
                                              config.backend().name(), registries.backends.KnownNames())));
    }
    if (config.backend().name() != "timing") continue;
    const auto timing = backends::timing::ParseTimingOptions(
        config.backend().has_params() ? &config.backend().params() : nullptr, {});
    if (!timing.ok()) throw Error(InvalidArgument("backend 'timing': " + timing.status().message()));
    const fs::path dir = timing->preset_dir.empty() ? backends::timing::DefaultPresetDir() : timing->preset_dir;
    ThrowIfError(backends::timing::LoadMemoryPreset(dir, timing->memory).status());
    ThrowIfError(backends::timing::LoadLinkPreset(dir, timing->link).status());
    ThrowIfError(backends::timing::LoadComputePreset(dir, timing->compute).status());
  }
}

std::vector<std::string> TrainCommand(const SweepOptions& options, const GridRun& run, const fs::path& report) {
  std::vector<std::string> argv;
  if (options.launch == "mpirun") {
    argv = {"mpirun", "-np", std::to_string(options.np), "--oversubscribe", "--bind-to", "none"};
    if (geteuid() == 0) argv.emplace_back("--allow-run-as-root");
    if (options.run_timeout > 0) {
      // A backstop should the sweep itself be killed: mpirun stops the ranks
      // on its own a little after the sweep would have.
      argv.emplace_back("--timeout");
      argv.push_back(std::to_string(static_cast<long>(std::ceil(options.run_timeout)) + 30));
    }
  }
  argv.push_back(sweep::SelfExecutable().string());
  for (const char* a : {"train", "--quiet", "--config"}) argv.emplace_back(a);
  argv.push_back(options.config_path);
  for (const std::string& o : RunOverrides(options, run)) {
    argv.emplace_back("--set");
    argv.push_back(o);
  }
  argv.emplace_back("--report");
  argv.push_back(report.string());
  if (options.launch == "local") {
    argv.emplace_back("--ranks");
    argv.push_back(options.ranks);
  }
  return argv;
}

proto::Report ReadReport(const fs::path& path) { return ValueOrThrow(metrics::ReadReportFile(path.string())); }

// A run stopped by --run-timeout leaves DIR/runs/<name>/timed-out.txt with
// the timeout it had: a resumed sweep with no longer a timeout counts it as
// timed out again without running it; a longer one runs it again. A run
// that failed with a diverged model (train's one-line error says
// "diverged: ...") leaves diverged.txt with that line: it counts as
// diverged on resume too (remove the file to try again).
constexpr const char* kTimedOutFile = "timed-out.txt";
constexpr const char* kDivergedFile = "diverged.txt";

std::optional<double> RecordedTimeout(const fs::path& dir) {
  std::ifstream in(dir / kTimedOutFile);
  double seconds = 0;
  if (in >> seconds) return seconds;
  return std::nullopt;
}

bool IsDivergence(const std::string& error_line) { return error_line.find(": diverged: ") != std::string::npos; }

enum class RunSource { kRan, kRecorded };

// Runs (or finds) one run's outcome.
sweep::RunOutcome RunOne(const SweepOptions& options, const GridRun& run, const sweep::Target& target,
                         const fs::path& out, RunSource& source) {
  using sweep::RunStatus;
  const fs::path dir = out / "runs" / run.name;
  const fs::path report = dir / "report.json";
  const auto summarize = [&target](const proto::Report& r) { return ValueOrThrow(sweep::Summarize(r, target)); };
  source = RunSource::kRecorded;
  if (fs::exists(report)) return summarize(ReadReport(report));
  if (fs::exists(dir / kDivergedFile)) return sweep::FailedOutcome(RunStatus::kDiverged, target, 0);
  const std::optional<double> recorded = RecordedTimeout(dir);
  if (recorded && options.run_timeout > 0 && options.run_timeout <= *recorded) {
    return sweep::FailedOutcome(RunStatus::kTimedOut, target, *recorded);
  }
  source = RunSource::kRan;
  fs::create_directories(dir);
  const fs::path partial = dir / "report.partial.json";
  fs::remove(partial);
  fs::remove(dir / kTimedOutFile);
  const std::vector<std::string> argv = TrainCommand(options, run, partial);
  {
    std::ofstream command(dir / "command.txt", std::ios::trunc);
    for (const std::string& a : argv) command << a << (a == argv.back() ? "\n" : " ");
  }
  const auto started = std::chrono::steady_clock::now();
  const sweep::ProcessExit exit =
      ValueOrThrow(sweep::RunProcessWithTimeout(argv, dir / "log.txt", options.run_timeout));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (exit.timed_out) {
    fs::remove(partial);
    ThrowIfError(sweep::WriteFileAtomically(dir / kTimedOutFile, fmt::format("{}\n", options.run_timeout)));
    return sweep::FailedOutcome(RunStatus::kTimedOut, target, options.run_timeout);
  }
  const std::string error = sweep::LastLine(dir / "log.txt");
  if (exit.code != 0 && IsDivergence(error)) {
    ThrowIfError(sweep::WriteFileAtomically(dir / kDivergedFile, error + "\n"));
    return sweep::FailedOutcome(RunStatus::kDiverged, target, seconds);
  }
  if (exit.code != 0 || !fs::exists(partial)) {
    throw Error(Internal(fmt::format("run {} failed (exit {}; log {}): {}", run.name, exit.code,
                                     (dir / "log.txt").string(), error)));
  }
  fs::rename(partial, report);
  return summarize(ReadReport(report));
}

// What every run of DIR shares besides its grid values: the base config's
// text, the --set overrides, the launch and the repeat field. A report in
// DIR is reused only under the same base (the runs are named by their grid
// values alone).
std::string SweepBase(const SweepOptions& options) {
  std::ifstream in(options.config_path);
  std::stringstream text;
  text << "config " << options.config_path << ":\n" << in.rdbuf() << "\n";
  for (const std::string& s : options.sets) text << "--set " << s << "\n";
  text << "--launch " << options.launch << (options.launch == "local" ? " --ranks " + options.ranks
                                                                         : " --np " + std::to_string(options.np))
       << "\n--repeat-seed " << options.repeat_seed << "\n";
  return text.str();
}

void CheckSameBase(const fs::path& out, const std::string& base) {
  const fs::path file = out / "sweep-base.txt";
  if (fs::exists(file)) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    if (text.str() != base) {
      throw Error(InvalidArgument(fmt::format("--out {}: holds runs of another base config, --set or launch (see {}); "
                                              "use another --out or remove it",
                                              out.string(), file.string())));
    }
    return;
  }
  fs::create_directories(out);
  ThrowIfError(sweep::WriteFileAtomically(file, base));
}

void RunSweep(const SweepOptions& options, const runtime::Registries& registries) {
  if (options.launch != "local" && options.launch != "mpirun") {
    throw Error(InvalidArgument(fmt::format("--launch must be local or mpirun, got '{}'", options.launch)));
  }
  if (!(options.run_timeout >= 0)) {
    throw Error(InvalidArgument(fmt::format("--run-timeout must be >= 0 seconds, got {}", options.run_timeout)));
  }
  if (options.repeats < 1) throw Error(InvalidArgument(fmt::format("--repeats must be >= 1, got {}", options.repeats)));
  const sweep::Grid grid = ValueOrThrow(sweep::ParseGrid(options.grid));
  const sweep::Target target = ValueOrThrow(sweep::ParseTarget(options.target, options.metric));
  const sweep::Baseline baseline = ValueOrThrow(sweep::ParseBaseline(options.baseline, grid));
  const std::string repeat_field = options.repeat_seed == "none" ? "" : options.repeat_seed;
  for (const sweep::GridAxis& axis : grid) {
    if (axis.field == repeat_field) {
      throw Error(InvalidArgument(fmt::format("--grid {} is also the field repeats set (--repeat-seed); pass "
                                              "--repeat-seed none or another field",
                                              axis.field)));
    }
  }
  const std::vector<GridRun> runs = sweep::ExpandGrid(grid, options.repeats, repeat_field);
  CheckRuns(options, runs, registries);

  const fs::path out(options.out);
  CheckSameBase(out, SweepBase(options));
  fs::create_directories(out / "runs");
  std::vector<sweep::SweepRun> done;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    RunSource source = RunSource::kRan;
    sweep::RunOutcome outcome = RunOne(options, runs[i], target, out, source);
    if (!options.quiet) {
      const std::string before = source == RunSource::kRecorded ? "recorded before, " : "";
      std::string what;
      switch (outcome.status) {
        case sweep::RunStatus::kTimedOut: what = fmt::format("timed out after {} s", outcome.wall_seconds); break;
        case sweep::RunStatus::kDiverged: what = "diverged"; break;
        case sweep::RunStatus::kOk:
          what = fmt::format("{} {:.4f}{}", outcome.metric, outcome.final_value,
                             !target.set                ? ""
                             : outcome.clocks_to_target ? fmt::format(", target at clock {}", *outcome.clocks_to_target)
                                                        : ", target not reached");
      }
      std::fprintf(stderr, "[sweep] %zu/%zu %s: %s%s\n", i + 1, runs.size(), runs[i].name.c_str(), before.c_str(),
                   what.c_str());
    }
    done.push_back({runs[i], std::move(outcome)});
  }
  // A run without a report names the metric the others followed.
  const auto has_report = [](const sweep::SweepRun& r) { return r.outcome.status == sweep::RunStatus::kOk; };
  const auto named = std::find_if(done.begin(), done.end(), has_report);
  for (sweep::SweepRun& r : done) {
    if (!has_report(r) && named != done.end()) r.outcome.metric = named->outcome.metric;
  }
  ThrowIfError(sweep::WriteTables(out, grid, target, baseline, done));
  if (options.no_plots) return;
  ThrowIfError(sweep::WritePlotScript(out / "plots", grid, target, done));
  std::string why;
  if (!sweep::DrawPlots(out / "plots", why)) std::fprintf(stderr, "[sweep] plots skipped: %s\n", why.c_str());
  if (!options.quiet) std::fprintf(stderr, "[sweep] %s: results.csv summary.csv curves.csv wall.csv%s plots/\n",
                                   out.string().c_str(), baseline.set() ? " speedup.csv" : "");
}

}  // namespace

void AddSweepCommand(CLI::App& app, const runtime::Registries& registries) {
  auto options = std::make_shared<SweepOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run a grid of training runs (resumable) and write results.csv, summary.csv and plots");
  cmd->add_option("--config", options->config_path, "Base run configuration")->required()->check(CLI::ExistingFile);
  cmd->add_option("--grid", options->grid, "field=v1,v2,...: a config field and its values (repeatable)");
  cmd->add_option("--set", options->sets, "field=value for every run (repeatable)");
  cmd->add_option("--repeats", options->repeats, "Runs per grid point (default 1)");
  cmd->add_option("--repeat-seed", options->repeat_seed,
                  "Field that repeat r sets to r, or 'none' (default training.straggler.seed)");
  cmd->add_option("--launch", options->launch, "local (ranks as threads, --ranks) or mpirun (-np, --np)");
  cmd->add_option("--ranks", options->ranks, "C:M compute and memory ranks with --launch local (default 3:1)");
  cmd->add_option("--np", options->np, "Processes with --launch mpirun (default 4)");
  cmd->add_option("--target", options->target, "Metric value to reach: '<=V' (loss; a bare V too) or '>=V'");
  cmd->add_option("--metric", options->metric, "Curve metric to follow (default the app's main metric)");
  cmd->add_option("--baseline", options->baseline, "field=value: also write speedup.csv against that value");
  cmd->add_option("--out", options->out, "Output directory (reused: runs with a report are skipped)")->required();
  cmd->add_option("--run-timeout", options->run_timeout,
                  "Seconds a run may take (0: no limit); a run past it is stopped, recorded as status 'timeout' "
                  "in results.csv, and the sweep goes on");
  cmd->add_flag("--no-plots", options->no_plots, "Tables only");
  cmd->add_flag("--quiet", options->quiet, "No progress on stderr");
  cmd->callback([options, &registries] { RunSweep(*options, registries); });
}

}  // namespace stalelearn::cli
