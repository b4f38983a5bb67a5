#include "backends/builtin.h"

#include <cstdlib>
#include <string>

#include "backends/local/register.h"
#include "backends/timing/register.h"
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

}  // namespace stalelearn::backends
