// Backends created by name (framework/README.md, convention 4). Registration is explicit: the
// program calls RegisterBuiltinBackends (backends/builtin.h) once at start-up;
// no static initialisers that a linker could drop.
//
// A backend with options registers its options message (protobuf, beside its
// code) and resolve function with Add; they become the config section
// `backend { name: "x" x { ... } }` (framework/core/config_schema.h), whose
// resolved message reaches the factory packed in BackendContext::params. A
// backend that wraps others (timing) registers its section with wraps set:
// the sections of the backends it wraps then reach it in
// BackendContext::wrapped.
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

#include <google/protobuf/any.pb.h>
#include <google/protobuf/map.h>

#include "framework/core/config_schema.h"
#include "framework/core/status.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/transport.h"

namespace stalelearn::transport {

class BackendRegistry;

// Everything a backend factory may use. References live for the call only;
// a backend that keeps the bootstrap must be destroyed before it.
struct BackendContext {
  Bootstrap& bootstrap;
  // key=value options of a backend created directly in code, without a
  // section (bench rma --backend-option, tests; e.g. tls=tcp for ucx): the
  // fields of its options message by name. The config gives none (its
  // backends' options are their sections).
  const std::map<std::string, std::string>& options;
  // For decorators (timing) that create the backend they wrap.
  const BackendRegistry& registry;
  // The backend's resolved options message (config.backend.params), or
  // null: the factory uses its declared defaults.
  const google::protobuf::Any* params = nullptr;
  // For decorators: the resolved sections of the backends they wrap, by
  // name (config.backend.wrapped), or null.
  const google::protobuf::Map<std::string, google::protobuf::Any>* wrapped = nullptr;
};

using BackendFactory = std::function<Result<std::unique_ptr<Transport>>(const BackendContext&)>;

class BackendRegistry {
 public:
  // kInvalidArgument if `name` is taken. `options`: the backend's config
  // section (its name is `name`; prototype null: a backend without one).
  Status Add(std::string name, std::string description, BackendFactory factory,
             config::Section options = {});
  // kNotFound naming the known backends if `name` is unknown.
  Result<std::unique_ptr<Transport>> Create(std::string_view name, const BackendContext& context) const;
  bool Contains(std::string_view name) const;
  std::vector<std::string> names() const;
  // "local, timing, ucx"
  std::string KnownNames() const;
  // The config sections of the backends that registered an options message.
  std::vector<config::Section> sections() const;

 private:
  struct Entry {
    std::string description;
    BackendFactory factory;
    config::Section options;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace stalelearn::transport
