// `stalelearn train --config FILE [--set k=v]... [--report FILE] [--ranks C:M] [--resume DIR]`
//
// --resume DIR continues from the newest complete checkpoint under DIR
// (training.checkpoint.resume_dir; framework/runtime/checkpointer.h).
//
// A signal (SIGINT, SIGTERM, SIGUSR1) stops the run at the next clock
// boundary every rank agrees on (framework/runtime/stop_agreement.h): the
// report says `stopped`, a checkpoint is written when training.checkpoint.dir
// is set, and the exit code is 75 (kStoppedExitCode).
//
// Under mpirun (or srun) every process is one rank: MPI bootstrap, default
// backend "ucx". With --ranks C:M the same code runs C compute and M memory
// ranks as threads of this process on the in-process bootstrap, default
// backend "local" (single-node emulation without mpirun).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "apps/cli/commands.h"
#include "backends/builtin.h"
#include "framework/core/config_loader.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "framework/metrics/report_writer.h"
#include "framework/runtime/checkpoint_store.h"
#include "framework/runtime/registries.h"
#include "framework/runtime/stop_request.h"
#include "framework/runtime/train.h"
#include "framework/transport/inprocess_bootstrap.h"
#include "framework/transport/mpi_bootstrap.h"

namespace stalelearn::cli {
namespace {

struct TrainOptions {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string report_path;
  std::string ranks;  // "C:M"
  std::string resume_dir;
  bool quiet = false;
};

struct RankCounts {
  int compute = 0;
  int memory = 0;
};

Result<RankCounts> ParseRanks(const std::string& text) {
  const auto colon = text.find(':');
  RankCounts counts;
  const auto parse = [](std::string_view s, int& out) {
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size();
  };
  if (colon == std::string::npos || !parse(std::string_view(text).substr(0, colon), counts.compute) ||
      !parse(std::string_view(text).substr(colon + 1), counts.memory) || counts.compute < 1 || counts.memory < 0) {
    return InvalidArgument(fmt::format("--ranks must be C:M with C >= 1 compute and M >= 0 memory ranks, got '{}'",
                                       text));
  }
  return counts;
}

std::optional<std::string_view> Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string_view(value);
}

// "compute ranks' simulated ms by loop phase (mean over the ranks in it):
// hand_over 5.76, ...": where the makespan went (report `phases`); in real
// time the same in wall seconds; "" without phases.
std::string PhasesLine(const proto::Report& report) {
  const bool simulated = report.has_simulated();
  std::vector<std::pair<std::string, std::pair<double, int>>> phases;  // loop order, (sum, ranks)
  for (const proto::RankReport& r : report.ranks()) {
    for (const proto::PhaseTime& p : r.phases()) {
      auto it = std::ranges::find(phases, p.phase(), [](const auto& e) { return e.first; });
      if (it == phases.end()) it = phases.insert(phases.end(), {p.phase(), {0.0, 0}});
      it->second.first += simulated ? 1e3 * (p.simulated_compute_seconds() + p.simulated_transfer_seconds() +
                                             p.simulated_wait_seconds())
                                    : p.wall_seconds();
      ++it->second.second;
    }
  }
  std::string line;
  for (const auto& [name, sum] : phases) {
    line += fmt::format("{}{} {:.3g}", line.empty() ? "" : ", ", name, sum.first / sum.second);
  }
  if (line.empty()) return line;
  return fmt::format("compute ranks' {} by loop phase (mean over the ranks in it): {}",
                     simulated ? "simulated ms" : "wall seconds", line);
}

void PrintSummary(const proto::Report& report, const std::string& report_path) {
  // A stopped run: the epochs it completed (its last curve point).
  const int epochs = report.has_stopped() && report.curve_size() > 0 ? report.curve().rbegin()->epoch() : report.epochs();
  std::fprintf(stderr, "[stalelearn] %s: %s %s %.4f after %d epochs in %.2f s (mode %s, backend %s)\n",
               report.has_stopped() ? "stopped" : "done", report.app().c_str(), report.final().metric().c_str(),
               report.final().value(), epochs,
               report.wall_seconds(), report.mode().c_str(), report.backend().c_str());
  if (report.has_simulated()) {
    std::fprintf(stderr, "[stalelearn] simulated: %.6f s (training %.6f s) on %s / %s / %s (%s)\n",
                 report.simulated().total_seconds(), report.simulated().training_seconds(),
                 report.simulated().memory_preset().c_str(), report.simulated().link_preset().c_str(),
                 report.simulated().compute_preset().c_str(),
                 report.simulated().deterministic() ? "deterministic" : "not deterministic");
  }
  if (const std::string phases = PhasesLine(report); !phases.empty()) {
    std::fprintf(stderr, "[stalelearn] %s\n", phases.c_str());
  }
  if (report.has_best()) {
    std::fprintf(stderr, "[stalelearn] best: %s %.4f after epoch %d (model checksum %s)\n",
                 report.best().metric().c_str(), report.best().value(), report.best().epoch(),
                 report.best().model_checksum().c_str());
  }
  if (report.has_best() && !report.best().model_file().empty()) {
    std::fprintf(stderr, "[stalelearn] best model: %s\n", report.best().model_file().c_str());
  }
  if (!report_path.empty()) std::fprintf(stderr, "[stalelearn] report: %s\n", report_path.c_str());
}

bool StoppedEarly(const proto::Report& report) {
  return report.has_stopped() && report.stopped().reason() == "early_stopping";
}

void PrintStopped(const proto::Stopped& stopped) {
  if (stopped.reason() == "early_stopping") {
    std::fprintf(stderr, "[stalelearn] stopped early before clock %lld: the evaluation stopped improving "
                 "(training.early_stopping)%s%s\n", static_cast<long long>(stopped.clock()),
                 stopped.checkpoint().empty() ? "" : "; checkpoint ", stopped.checkpoint().c_str());
    return;
  }
  if (stopped.checkpoint().empty()) {
    std::fprintf(stderr, "[stalelearn] stopped by %s before clock %lld (no checkpoint: training.checkpoint.dir is "
                 "unset, or nothing was trained yet)\n", stopped.signal().c_str(), static_cast<long long>(stopped.clock()));
    return;
  }
  const std::string dir = std::filesystem::path(stopped.checkpoint()).parent_path().string();
  std::fprintf(stderr, "[stalelearn] stopped by %s before clock %lld; checkpoint %s; to continue, run the same "
               "command with --resume %s\n", stopped.signal().c_str(), static_cast<long long>(stopped.clock()),
               stopped.checkpoint().c_str(), dir.c_str());
}

// Runs one rank; the lowest surviving rank (rank 0 unless it died) writes the
// report, the trace and the summary line. Returns true when a signal stopped
// the run (every rank agrees); early stopping is a normal end.
bool TrainOneRank(const runtime::TrainInputs& inputs, transport::Bootstrap& bootstrap,
                  const std::string& report_path) {
  runtime::RankRun run = ValueOrThrow(runtime::TrainRank(inputs, bootstrap));
  const bool stopped = run.report.has_stopped() && !StoppedEarly(run.report);
  if (!run.writes_report) return stopped;
  if (!report_path.empty()) {
    if (Status written = metrics::WriteReportFile(run.report, report_path); !written.ok()) {
      // Checked before training, and failed anyway (a full disk, a removed
      // directory): the result of the run must not be lost with it.
      Result<std::string> saved = metrics::WriteReportToTemporaryFile(run.report);
      std::fprintf(stderr, "stalelearn: %s; final %s %.6g, model checksum %s; %s\n", written.message().c_str(),
                   run.report.final().metric().c_str(), run.report.final().value(), run.report.model_checksum().c_str(),
                   saved.ok() ? fmt::format("the report is in {}", *saved).c_str()
                              : saved.status().message().c_str());
      throw Error(std::move(written));
    }
  }
  if (const std::string& trace = inputs.config.output().trace(); !trace.empty()) {
    std::ofstream out(trace, std::ios::trunc);
    if (!(out << run.trace_csv)) throw Error(InvalidArgument(fmt::format("{}: cannot write the trace", trace)));
  }
  if (!inputs.config.output().quiet()) PrintSummary(run.report, report_path);
  if (run.report.has_stopped()) PrintStopped(run.report.stopped());
  return stopped;
}

void RunTrain(const TrainOptions& options, const runtime::Registries& registries) {
  std::optional<RankCounts> emulated;
  std::vector<std::string> overrides = options.overrides;
  if (!options.ranks.empty()) {
    emulated = ValueOrThrow(ParseRanks(options.ranks));
    overrides.push_back(fmt::format("cluster.memory_ranks={}", std::max(emulated->memory, 1)));
  }
  if (!options.resume_dir.empty()) {
    // Checked here, before any rank starts: a bad DIR is one line and exit 2.
    std::error_code ec;
    if (!std::filesystem::is_directory(options.resume_dir, ec)) {
      throw Error(InvalidArgument(fmt::format("--resume {}: no such directory", options.resume_dir)));
    }
    Result<runtime::LoadedCheckpoint> newest = runtime::FindNewestCheckpoint(options.resume_dir);
    if (!newest.ok()) throw Error(InvalidArgument(fmt::format("--resume: {}", newest.status().message())));
    overrides.push_back("training.checkpoint.resume_dir=" + options.resume_dir);
  }
  proto::Config config = ValueOrThrow(config::LoadConfig(options.config_path, overrides, ValueOrThrow(registries.Schema())));
  const runtime::ModeDefinition& mode = *ValueOrThrow(registries.modes.Find(config.consistency().mode()));
  if (config.backend().name().empty()) config.mutable_backend()->set_name(emulated ? "local" : "ucx");
  if (options.quiet) config.mutable_output()->set_quiet(true);
  // From here on SIGINT, SIGTERM and SIGUSR1 stop the run at a clock
  // boundary (also when they come while the data loads: before the first
  // clock); a second one ends it at once. A run that survives dead ranks
  // keeps their default action.
  if (config.faults().dead_after_seconds() <= 0) runtime::InstallStopSignalHandlers();
  const std::string report_path = options.report_path.empty() ? config.output().report() : options.report_path;
  // Before any data is read or rank started: a report or trace that cannot
  // be written fails now, not after the run (one line, exit 2).
  if (!report_path.empty()) ThrowIfError(metrics::CheckWritable(report_path, "--report"));
  if (!config.output().trace().empty()) ThrowIfError(metrics::CheckWritable(config.output().trace(), "output.trace"));
  if (emulated && emulated->memory == 0 && mode.uses_memory_ranks) {
    throw Error(InvalidArgument(fmt::format("--ranks C:0 runs no memory rank, which consistency.mode={} needs "
                                            "(use a mode without memory ranks, e.g. ALLREDUCE)",
                                            mode.name)));
  }
  if (!registries.backends.Contains(config.backend().name())) {
    throw Error(InvalidArgument(fmt::format("backend.name: unknown backend '{}' (backends: {})",
                                            config.backend().name(), registries.backends.KnownNames())));
  }

  const runtime::AppContext app_context{config, data::ResolveDataDir(Env("STALELEARN_DATA"), Env("HOME")),
                                        registries.datasets};
  const std::unique_ptr<runtime::App> app = ValueOrThrow(registries.apps.Create(config.app().name(), app_context));
  // GCC 12 at -O3 warns that the default-constructed std::function inside
  // inputs.wait "may be used uninitialized" when its destructor is inlined
  // here: a false positive (every member has an initializer).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
  const runtime::TrainInputs inputs{.config = config,
                                    .app = *app,
                                    .backends = registries.backends,
                                    .modes = registries.modes,
                                    .merge_policies = &registries.merge_policies};
#pragma GCC diagnostic pop

  std::atomic<bool> stopped{false};
  if (emulated) {
    transport::RunRanks(emulated->compute + emulated->memory, [&](transport::Bootstrap& bootstrap) {
      if (TrainOneRank(inputs, bootstrap, report_path)) stopped = true;
    });
    if (stopped) throw ExitWithCode{kStoppedExitCode};
    return;
  }
  if (!transport::LaunchedByMpiLauncher()) {
    throw Error(InvalidArgument("not started by mpirun/srun: run under mpirun, or pass --ranks C:M for "
                                "single-process emulation"));
  }
  std::unique_ptr<transport::MpiSession> session = ValueOrThrow(transport::MpiSession::Start(nullptr, nullptr));
  try {
    std::unique_ptr<transport::Bootstrap> bootstrap = ValueOrThrow(transport::MakeMpiBootstrap());
    stopped = TrainOneRank(inputs, *bootstrap, report_path);
  } catch (const Error& e) {
    // One failing rank must not leave the others waiting in a collective.
    std::fprintf(stderr, "stalelearn: error on rank %d: %s\n", session->rank(), e.status().message().c_str());
    transport::MpiSession::Abort(e.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
  } catch (const std::exception& e) {
    // Unwinding into ~MpiSession would call MPI_Finalize while peers wait in a collective.
    std::fprintf(stderr, "stalelearn: error on rank %d: %s\n", session->rank(), e.what());
    transport::MpiSession::Abort(1);
  }
  // Every rank stopped at the same clock and left the collectives: finalize
  // (the session's destructor) and exit with the documented code.
  if (stopped) {
    session.reset();
    throw ExitWithCode{kStoppedExitCode};
  }
}

}  // namespace

void AddTrainCommand(CLI::App& app, const runtime::Registries& registries) {
  auto options = std::make_shared<TrainOptions>();
  CLI::App* train = app.add_subcommand(
      "train", "Train an app: under mpirun (one rank per process) or with --ranks C:M (ranks as threads).\n"
               "SIGINT, SIGTERM or SIGUSR1 stop it at the next clock boundary: checkpoint (if training.checkpoint.dir\n"
               "is set), final evaluation, report with 'stopped', exit code 75; a second signal ends it at once.");
  train->add_option("--config", options->config_path, "Run configuration (protobuf text format)")
      ->required()
      ->check(CLI::ExistingFile);
  train->add_option("--set", options->overrides, "Override a config field: field.path=value (repeatable)");
  train->add_option("--report", options->report_path, "Write the JSON report here (default: output.report)");
  train->add_option("--ranks", options->ranks,
                    "Single-process emulation: C compute and M memory ranks as threads (default backend local)");
  train->add_option("--resume", options->resume_dir,
                    "Continue from the newest complete checkpoint under DIR (training.checkpoint)");
  train->add_flag("--quiet", options->quiet, "No progress on stderr");
  train->callback([options, &registries] { RunTrain(*options, registries); });
}

}  // namespace stalelearn::cli
