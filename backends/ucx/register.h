// Registration of the 'ucx' backend (called by backends/builtin.cc).
#pragma once

#include "framework/transport/registry.h"

namespace stalelearn::backends::ucx {

Status RegisterBackend(transport::BackendRegistry& registry);

}  // namespace stalelearn::backends::ucx
