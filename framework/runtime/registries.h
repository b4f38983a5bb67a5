// Everything a program registers at start-up, passed to each app's (and
// each extension's) registration function: apps, consistency modes and
// backends, and the data sets apps know by name. Explicit registration, no static initialisers (convention 4, framework/README.md).
//
//   Registries registries;                          // built-in modes and backends
//   ThrowIfError(my_app::RegisterApp(registries));  // one line per app
//
// Thread-safety: filled during start-up, then read-only.
#pragma once

#include "framework/data/catalog.h"
#include "framework/runtime/app_registry.h"
#include "framework/runtime/consistency_mode.h"
#include "framework/transport/registry.h"

namespace stalelearn::runtime {

struct Registries {
  AppRegistry apps;
  ModeRegistry modes;
  transport::BackendRegistry backends;
  data::DatasetCatalog datasets;
};

// A registration function of an app or extension.
using Registration = Status (*)(Registries&);

}  // namespace stalelearn::runtime
