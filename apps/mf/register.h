// Registration of the 'mf' app: its config section (apps/mf/mf_config.proto),
// defaults, validation and factory. One line in a program's registration list.
#pragma once

#include "apps/mf/mf_config.pb.h"
#include "framework/runtime/registries.h"

namespace stalelearn::apps::mf {

// Fills MfConfig defaults (and data.name "movielens" when no data is named)
// and validates; errors name the field ("app.mf.rank ...").
Status ResolveConfig(MfConfig& params, proto::Config& config);

// Adds "mf" and its data set "movielens": reads data.path, or the catalog's
// path of data.name (default "movielens") under the data directory.
Status RegisterApp(runtime::Registries& registries);

}  // namespace stalelearn::apps::mf
