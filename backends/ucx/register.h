// Registration of the 'ucx' backend (called by backends/builtin.cc).
#pragma once

#include <string>

#include "framework/transport/registry.h"

namespace stalelearn::backends::ucx {

Status RegisterBackend(transport::BackendRegistry& registry);

// The UCX library this binary runs with (ucp_get_version_string), e.g. "1.13.1".
std::string UcxLibraryVersion();

}  // namespace stalelearn::backends::ucx
