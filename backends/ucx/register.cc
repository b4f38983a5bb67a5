// Registers the 'ucx' backend: real one-sided RMA over UCX, with any bootstrap
// (MPI under mpirun, or in-process for ranks as threads), with its options
// message (the config section `backend { name: "ucx" ucx { ... } }`,
// ucx_options.proto).
#include "backends/ucx/register.h"

#include <ucp/api/ucp.h>

#include "backends/ucx/options.h"
#include "backends/ucx/ucx_transport.h"

namespace stalelearn::backends::ucx {
namespace {

Result<std::unique_ptr<transport::Transport>> CreateUcxTransport(const transport::BackendContext& context) {
  STALELEARN_ASSIGN_OR_RETURN(UcxOptions options, ParseUcxOptions(context.params, context.options));
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<UcxTransport> created, UcxTransport::Create(context.bootstrap, options));
  return std::unique_ptr<transport::Transport>(std::move(created));
}

}  // namespace

Status RegisterBackend(transport::BackendRegistry& registry) {
  return registry.Add("ucx",
                      "one-sided RMA over UCX: shared memory within a node, tcp with tls=tcp "
                      "(section ucx { tls net_devices progress_thread })",
                      CreateUcxTransport,
                      config::Section{"ucx", &stalelearn::ucx::UcxBackendOptions::default_instance(), {}});
}

std::string UcxLibraryVersion() { return ucp_get_version_string(); }

}  // namespace stalelearn::backends::ucx
