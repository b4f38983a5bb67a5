// The `stalelearn` command line as a library: a program is its list of app
// registrations. The built-in program (apps/cli/main.cc) and every app built
// outside the tree (stalelearn_add_app_program in the installed CMake
// package) call Main with their own list; train, data, bench and version
// then work the same way in all of them, under mpirun or with --ranks C:M.
//
//   int main(int argc, char** argv) {
//     return stalelearn::cli::Main(argc, argv, {&my_app::RegisterApp});
//   }
//
// Main registers the built-in consistency modes and backends first, then
// calls each registration in order. Not reentrant (one call per process).
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "framework/runtime/registries.h"

namespace stalelearn::cli {

// An app's own benchmark, run as `stalelearn bench <name> [ARGS...]`: it
// parses ARGS itself (--help included) and returns an error status for the
// command line to print (exit code as for every command).
struct AppBench {
  const char* name;
  const char* description;
  Status (*run)(const std::vector<std::string>& args, const std::filesystem::path& data_dir);
};

// Parses the command line and runs the sub-command. Returns the exit code:
// 0, 2 for bad input (config, data, command line), 1 for other failures.
int Main(int argc, char** argv, std::initializer_list<runtime::Registration> registrations,
         std::initializer_list<AppBench> benches = {});

}  // namespace stalelearn::cli
