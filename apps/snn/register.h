// Registration of the 'snn' app: its config section (apps/snn/snn_config.proto),
// defaults, validation, data sets (mnist, fashion-mnist) and factory.
#pragma once

#include <string>
#include <vector>

#include "apps/snn/snn_config.pb.h"
#include "framework/runtime/registries.h"

namespace stalelearn::apps::snn {

// "256" or "512,256": 1 to 3 widths in [1, 65536], or InvalidArgument naming app.snn.hidden.
Result<std::vector<int>> ParseHiddenWidths(const std::string& text);

// Fills SnnConfig defaults (and data.name "mnist" when no data is named) and
// validates; errors name the field ("app.snn.steps ...").
Status ResolveConfig(SnnConfig& params, proto::Config& config);

// Adds "snn" and its data sets: reads data.path (a train-images IDX file with
// the other three files beside it), or the catalog's path of data.name.
Status RegisterApp(runtime::Registries& registries);

}  // namespace stalelearn::apps::snn
