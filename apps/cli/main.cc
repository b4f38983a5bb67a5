// The `stalelearn` command-line program.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "apps/cli/commands.h"
#include "framework/core/error.h"
#include "framework/core/version.h"

namespace {

int ExitCodeFor(const stalelearn::Status& status) {
  switch (status.code()) {
    case stalelearn::StatusCode::kInvalidArgument:
    case stalelearn::StatusCode::kNotFound:
    case stalelearn::StatusCode::kOutOfRange:
    case stalelearn::StatusCode::kDataLoss:
      return 2;  // bad input: config, data, command line
    default:
      return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stalelearn: asynchronous bounded-staleness training of sparse models\n"
               "(compute ranks train replicas; memory ranks merge them over one-sided RMA)",
               "stalelearn"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(stalelearn::kVersion));
  stalelearn::cli::AddVersionCommand(app);
  stalelearn::cli::AddTrainCommand(app);
  stalelearn::cli::AddDataCommand(app);
  stalelearn::cli::AddBenchCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 through here; usage errors exit 2.
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const stalelearn::Error& e) {
    std::fprintf(stderr, "stalelearn: error: %s\n", e.status().message().c_str());
    return ExitCodeFor(e.status());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stalelearn: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
