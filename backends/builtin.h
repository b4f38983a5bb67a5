// Registers every backend built into this binary (explicitly; STYLE.md 4).
#pragma once

#include "framework/transport/registry.h"

namespace stalelearn::backends {

// Adds local, ucx (when built) and timing to `registry`.
Status RegisterBuiltinBackends(transport::BackendRegistry& registry);

// A registry with every built-in backend, built once; thread-safe to read.
const transport::BackendRegistry& BuiltinRegistry();

}  // namespace stalelearn::backends
