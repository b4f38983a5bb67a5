// The data sets of the 'lr' app, added to the program's catalog at start-up.
//
// Thread-safety: call during start-up, like every catalog Add.
#pragma once

#include "framework/data/catalog.h"

namespace stalelearn::apps::lr {

// Adds "spam" (the SpamAssassin corpus as a bag of words, spam_bag_of_words.h;
// prepared by `stalelearn data prepare spam`, which deploy/fetch-data.sh runs)
// and "heart_scale" (LIBSVM's 270 x 13 example, from Debian's liblinear-tools).
Status RegisterDatasets(data::DatasetCatalog& catalog);

}  // namespace stalelearn::apps::lr
