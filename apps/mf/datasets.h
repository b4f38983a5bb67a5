// The data sets of the 'mf' app, added to the program's catalog at start-up.
//
// Thread-safety: call during start-up, like every catalog Add.
#pragma once

#include "framework/data/catalog.h"

namespace stalelearn::apps::mf {

// Adds "movielens": MovieLens ml-latest-small as a ratings TSV
// (deploy/fetch-data.sh converts it from Debian's r-cran-dslabs), and "synth":
// <data dir>/synth/ratings.tsv, written by `stalelearn data synth ratings`.
Status RegisterDatasets(data::DatasetCatalog& catalog);

}  // namespace stalelearn::apps::mf
