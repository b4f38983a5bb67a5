#include "backends/builtin.h"

#include <cstdlib>
#include <map>
#include <string>

#include "backends/local/register.h"
#include "backends/timing/register.h"
#include "backends/timing/timing_options.h"
#ifdef STALELEARN_WITH_UCX
#include "backends/ucx/register.h"
#endif

namespace stalelearn::backends {

std::string UcxVersionLine() {
#ifdef STALELEARN_WITH_UCX
  return "UCX " + ucx::UcxLibraryVersion();
#else
  return "UCX: not built";
#endif
}

Status RegisterBuiltinBackends(transport::BackendRegistry& registry) {
  STALELEARN_RETURN_IF_ERROR(local::RegisterBackend(registry));
#ifdef STALELEARN_WITH_UCX
  STALELEARN_RETURN_IF_ERROR(ucx::RegisterBackend(registry));
#endif
  STALELEARN_RETURN_IF_ERROR(timing::RegisterBackend(registry));
  return Status::Ok();
}

const transport::BackendRegistry& BuiltinRegistry() {
  static const transport::BackendRegistry registry = [] {
    transport::BackendRegistry r;
    if (!RegisterBuiltinBackends(r).ok()) std::abort();  // programming error: duplicate names
    return r;
  }();
  return registry;
}

void ApplyTimingConfig(proto::Config& config) {
  if (config.backend().name() != "timing") return;
  auto& options = *config.mutable_backend()->mutable_options();
  std::map<std::string, std::string> merged(options.begin(), options.end());
  timing::AddTimingConfig(config.timing(), merged);
  for (const auto& [key, value] : merged) options[key] = value;
}

}  // namespace stalelearn::backends
