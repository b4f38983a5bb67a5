// Registers the 'local' backend: it needs ranks that are threads of one
// process, i.e. the in-process bootstrap (framework/transport/inprocess_bootstrap.h).
#include "backends/local/register.h"

#include <fmt/format.h>

#include "backends/local/local_transport.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::backends::local {
namespace {

// Key under which the ranks of one group find their common fabric.
constexpr const char* kFabricKey = "stalelearn.backends.local.fabric";

Result<std::unique_ptr<transport::Transport>> CreateLocalTransport(const transport::BackendContext& context) {
  // The registry prefixes "backend 'local': " to these messages.
  if (!context.options.empty()) {
    return InvalidArgument(fmt::format("unknown option '{}' (the local backend takes no options)",
                                       context.options.begin()->first));
  }
  auto* in_process = dynamic_cast<transport::InProcessBootstrap*>(&context.bootstrap);
  if (in_process == nullptr) {
    return FailedPrecondition("needs single-process emulation (--ranks C:M)");
  }
  transport::InProcessGroup& group = in_process->group();
  std::shared_ptr<LocalFabric> fabric = group.GetOrCreateShared<LocalFabric>(
      kFabricKey, [&group] { return std::make_shared<LocalFabric>(group.world_size()); });
  if (!fabric) return Internal(fmt::format("in-process object '{}' has another type", kFabricKey));
  return std::unique_ptr<transport::Transport>(
      std::make_unique<LocalTransport>(in_process->rank(), std::move(fabric)));
}

}  // namespace

Status RegisterBackend(transport::BackendRegistry& registry) {
  return registry.Add("local", "ranks as threads of one process; RMA is memcpy and std::atomic_ref (reference)",
                      CreateLocalTransport);
}

}  // namespace stalelearn::backends::local
