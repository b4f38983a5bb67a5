// Registration of the 'lr' app: its config section (apps/lr/lr_config.proto),
// defaults, validation, data sets (spam, heart_scale) and factory.
#pragma once

#include "apps/lr/lr_config.pb.h"
#include "framework/runtime/registries.h"

namespace stalelearn::apps::lr {

// Fills LrConfig defaults (and data.name "spam" when no data is named) and
// validates; errors name the field ("app.lr.learning_rate ...").
Status ResolveConfig(LrConfig& params, proto::Config& config);

// Adds "lr" and its data sets: reads data.path (any LIBSVM file), or the
// catalog's path of data.name.
Status RegisterApp(runtime::Registries& registries);

}  // namespace stalelearn::apps::lr
