// Registration of the 'lda' app: its config section (apps/lda/lda_config.proto),
// defaults, validation, data sets (brown, sotu) and factory.
#pragma once

#include "apps/lda/lda_config.pb.h"
#include "framework/runtime/registries.h"

namespace stalelearn::apps::lda {

// Fills LdaConfig defaults (and data.name "brown" when no data is named) and
// validates; errors name the field ("app.lda.topics ...").
Status ResolveConfig(LdaConfig& params, proto::Config& config);

// Adds "lda" and its data sets: reads data.path (any token corpus file,
// apps/lda/corpus.h), or the catalog's path of data.name.
Status RegisterApp(runtime::Registries& registries);

}  // namespace stalelearn::apps::lda
