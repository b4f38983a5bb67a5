// The data sets of the 'lda' app, added to the program's catalog at start-up.
//
// Thread-safety: call during start-up, like every catalog Add.
#pragma once

#include "framework/data/catalog.h"

namespace stalelearn::apps::lda {

// Adds "brown" (the Brown corpus) and "sotu" (State of the Union speeches)
// as token corpora (apps/lda/corpus.h), prepared by `stalelearn data prepare
// brown|sotu`, which deploy/fetch-data.sh runs.
Status RegisterDatasets(data::DatasetCatalog& catalog);

}  // namespace stalelearn::apps::lda
