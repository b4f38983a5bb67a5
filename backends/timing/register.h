// Registration of the 'timing' backend (called by backends/builtin.cc).
#pragma once

#include "framework/transport/registry.h"

namespace stalelearn::backends::timing {

Status RegisterBackend(transport::BackendRegistry& registry);

}  // namespace stalelearn::backends::timing
