// `stalelearn version`: this build and the libraries it runs with, one per
// line; UCX and MPI are asked at run time (the libraries loaded, not the
// headers compiled against), so a mismatch between machines shows.
//
//   stalelearn 0.1.0 (protobuf 3.21.12, oneTBB 2021.8.0, fmt 9.1.0)
//   UCX 1.13.1
//   MPI: Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, ...
#include <fmt/core.h>

#include "apps/cli/commands.h"
#include "backends/builtin.h"
#include "framework/core/version.h"
#include "framework/transport/mpi_bootstrap.h"

namespace stalelearn::cli {

std::string VersionText() {
  return fmt::format("{}\n{}\nMPI: {}\n", VersionString(), backends::UcxVersionLine(),
                     transport::MpiLibraryVersion());
}

void AddVersionCommand(CLI::App& app) {
  app.add_subcommand("version", "Print the version and the libraries it runs with (UCX, MPI, ...)")->callback([] {
    fmt::print("{}", VersionText());
  });
}

}  // namespace stalelearn::cli
