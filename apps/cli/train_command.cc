// `stalelearn train`: placeholder until training lands.
#include "apps/cli/commands.h"

namespace stalelearn::cli {

void AddTrainCommand(CLI::App& app) { app.add_subcommand("train", "(not built yet)"); }

}  // namespace stalelearn::cli
