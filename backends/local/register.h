// Registration of the 'local' backend (called by backends/builtin.cc).
#pragma once

#include "framework/transport/registry.h"

namespace stalelearn::backends::local {

Status RegisterBackend(transport::BackendRegistry& registry);

}  // namespace stalelearn::backends::local
