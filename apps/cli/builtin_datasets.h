// The data sets of the apps built into the stalelearn program, in one catalog.
//
// Thread-safety: BuiltinDatasets() builds a new catalog on each call; the
// caller owns it.
#pragma once

#include "framework/data/catalog.h"

namespace stalelearn::cli {

// Every built-in app's RegisterDatasets, in a fixed order (mf, lr).
Result<data::DatasetCatalog> BuiltinDatasets();

}  // namespace stalelearn::cli
