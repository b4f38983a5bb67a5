// Everything a program registers at start-up, passed to each app's (and
// each extension's) registration function: apps, consistency modes,
// backends, merge policies, and the data sets apps know by name. Explicit
// registration, no static initialisers (convention 4, framework/README.md).
//
// One driver model: an app, a backend and a merge policy each register a
// name, a typed options message with its resolve function (the config
// section `app { x { } }`, `backend { x { } }`, `merge { ... value { x { } } }`;
// defaults and ranges declared as field options) and a factory; a
// consistency mode registers a name and a factory (its fields are generic).
// Schema() gathers the sections into the one config schema.
//
//   Registries registries;                          // the built-in merge policies
//   ThrowIfError(RegisterBuiltinModes(registries.modes));
//   ThrowIfError(my_app::RegisterApp(registries));  // one line per app
//   auto config = config::LoadConfig(path, overrides, ValueOrThrow(registries.Schema()));
//
// Thread-safety: filled during start-up, then read-only. Lifetimes: a
// schema returned by Schema() copies the sections; it needs no Registries.
#pragma once

#include "framework/core/config_schema.h"
#include "framework/data/catalog.h"
#include "framework/runtime/app_registry.h"
#include "framework/runtime/consistency_mode.h"
#include "framework/sync/merge_policy.h"
#include "framework/transport/registry.h"

namespace stalelearn::runtime {

struct Registries {
  AppRegistry apps;
  ModeRegistry modes;
  transport::BackendRegistry backends;
  // Starts with sum, staleness_aware, average, adagrad and adam.
  sync::MergePolicyRegistry merge_policies = sync::BuiltinMergePolicyRegistry();
  data::DatasetCatalog datasets;

  // The config schema: every app's, backend's and merge policy's section;
  // kInvalidArgument if a backend's or policy's name is no identifier.
  Result<config::ConfigSchema> Schema() const;
};

// The config sections of the merge policies that have options.
std::vector<config::Section> MergePolicySections(const sync::MergePolicyRegistry& policies);

// A registration function of an app or extension.
using Registration = Status (*)(Registries&);

}  // namespace stalelearn::runtime
