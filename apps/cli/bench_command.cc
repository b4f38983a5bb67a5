// `stalelearn bench ...`: placeholder until its issue lands.
#include "apps/cli/commands.h"

namespace stalelearn::cli {

void AddBenchCommand(CLI::App& app) {
  app.add_subcommand("bench", "(not built yet)");
}

}  // namespace stalelearn::cli
