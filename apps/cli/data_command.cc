// `stalelearn data ...`: placeholder until its issue lands.
#include "apps/cli/commands.h"

namespace stalelearn::cli {

void AddDataCommand(CLI::App& app) {
  app.add_subcommand("data", "(not built yet)");
}

}  // namespace stalelearn::cli
