// Backends created by name (framework/README.md, convention 4). Registration is explicit: the
// program calls RegisterBuiltinBackends (backends/builtin.h) once at start-up;
// no static initialisers that a linker could drop.
//
// Thread-safety: Add() during start-up only; Create() and names() may then be
// called from any thread concurrently (the registry is not modified any more).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/transport.h"

namespace stalelearn::transport {

class BackendRegistry;

// Everything a backend factory may use. References live for the call only;
// a backend that keeps the bootstrap must be destroyed before it.
struct BackendContext {
  Bootstrap& bootstrap;
  // Backend-specific options from config.backend.options (e.g. inner=ucx).
  const std::map<std::string, std::string>& options;
  // For decorators (timing) that create the backend they wrap.
  const BackendRegistry& registry;
};

using BackendFactory = std::function<Result<std::unique_ptr<Transport>>(const BackendContext&)>;

class BackendRegistry {
 public:
  // kInvalidArgument if `name` is taken.
  Status Add(std::string name, std::string description, BackendFactory factory);
  // kNotFound naming the known backends if `name` is unknown.
  Result<std::unique_ptr<Transport>> Create(std::string_view name, const BackendContext& context) const;
  bool Contains(std::string_view name) const;
  std::vector<std::string> names() const;
  // "local, timing, ucx"
  std::string KnownNames() const;

 private:
  struct Entry {
    std::string description;
    BackendFactory factory;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace stalelearn::transport
