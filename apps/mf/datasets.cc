#include "apps/mf/datasets.h"

namespace stalelearn::apps::mf {

Status RegisterDatasets(data::DatasetCatalog& catalog) {
  return catalog.Add({.name = "movielens",
                      .relative_path = "movielens/ratings.tsv",
                      .format = data::DatasetFormat::kRatingsTsv,
                      .sample_noun = "ratings",
                      .row_noun = "users",
                      .column_noun = "movies"});
}

}  // namespace stalelearn::apps::mf
