// Registration of the 'mf' app (called by the stalelearn program at start-up).
#pragma once

#include "framework/runtime/app_registry.h"

namespace stalelearn::apps::mf {

// Adds "mf": reads data.path, or the catalog's path of data.name (default
// "movielens") under the data directory.
Status RegisterApp(runtime::AppRegistry& registry);

}  // namespace stalelearn::apps::mf
