// Sub-commands of the `stalelearn` program, one file each. Every Add*Command
// registers its sub-command on the CLI11 app; its callback throws
// stalelearn::Error on failure, which main() turns into one line on stderr
// and a non-zero exit code (2 for bad input).
#pragma once

#include <CLI/CLI.hpp>

#include "apps/cli/cli_main.h"
#include "framework/runtime/registries.h"

namespace stalelearn::cli {

// `stalelearn train`'s exit code when a signal stopped the run at a clock
// boundary (report written, checkpoint if configured): EX_TEMPFAIL, "try
// again" (resume). deploy/slurm/stalelearn.sbatch requeues on it.
inline constexpr int kStoppedExitCode = 75;

// Thrown by a command that ends without an error but with a non-zero exit
// code; main() returns `code` and prints nothing more.
struct ExitWithCode {
  int code;
};

void AddTrainCommand(CLI::App& app, const runtime::Registries& registries);  // train_command.cc
void AddDataCommand(CLI::App& app, const data::DatasetCatalog& catalog);  // data_command.cc
void AddBenchCommand(CLI::App& app, std::vector<AppBench> app_benches = {});  // bench_command.cc
void AddSweepCommand(CLI::App& app, const runtime::Registries& registries);  // sweep_command.cc
void AddVersionCommand(CLI::App& app);  // version_command.cc
void AddPlotCommand(CLI::App& app);  // plot_command.cc
void AddCalibrateCommand(CLI::App& app);  // calibrate_command.cc

// What `stalelearn version` prints: this build and the UCX and MPI libraries.
std::string VersionText();

}  // namespace stalelearn::cli
