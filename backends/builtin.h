// Registers every backend built into this binary (explicitly; framework/README.md, convention 4).
#pragma once

#include <string>

#include "framework/proto/config.pb.h"
#include "framework/transport/registry.h"

namespace stalelearn::backends {

// "UCX 1.13.1", or "UCX: not built" (-DSTALELEARN_WITH_UCX=OFF).
std::string UcxVersionLine();

// Adds local, ucx (when built) and timing to `registry`.
Status RegisterBuiltinBackends(transport::BackendRegistry& registry);

// A registry with every built-in backend, built once; thread-safe to read.
const transport::BackendRegistry& BuiltinRegistry();

}  // namespace stalelearn::backends
