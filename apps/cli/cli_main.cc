#include "apps/cli/cli_main.h"

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "apps/cli/commands.h"
#include "backends/builtin.h"
#include "framework/core/error.h"
#include "framework/core/version.h"

namespace stalelearn::cli {
namespace {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kOutOfRange:
    case StatusCode::kDataLoss:
      return 2;  // bad input: config, data, command line
    default:
      return 1;
  }
}

}  // namespace

int Main(int argc, char** argv, std::initializer_list<runtime::Registration> registrations,
         std::initializer_list<AppBench> benches) {
  runtime::Registries registries;
  try {
    ThrowIfError(runtime::RegisterBuiltinModes(registries.modes));
    ThrowIfError(backends::RegisterBuiltinBackends(registries.backends));
    for (runtime::Registration registration : registrations) ThrowIfError(registration(registries));
  } catch (const Error& e) {
    std::fprintf(stderr, "stalelearn: error: registration: %s\n", e.status().message().c_str());
    return 1;
  }

  CLI::App app{fmt::format("stalelearn: asynchronous bounded-staleness training of sparse models\n"
                           "(compute ranks train replicas; memory ranks merge them over one-sided RMA)\n"
                           "apps: {}; modes: {}; backends: {}",
                           registries.apps.KnownNames(), registries.modes.KnownNames(),
                           registries.backends.KnownNames()),
               "stalelearn"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(kVersion));
  AddVersionCommand(app);
  AddTrainCommand(app, registries);
  AddDataCommand(app, registries.datasets);
  AddBenchCommand(app, std::vector<AppBench>(benches));
  AddSweepCommand(app, registries);
  AddPlotCommand(app);
  AddCalibrateCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const ExitWithCode& exit) {
    return exit.code;
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 through here; usage errors exit 2.
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const Error& e) {
    std::fprintf(stderr, "stalelearn: error: %s\n", e.status().message().c_str());
    return ExitCodeFor(e.status());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stalelearn: error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace stalelearn::cli
