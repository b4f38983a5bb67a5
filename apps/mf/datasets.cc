#include "apps/mf/datasets.h"

namespace stalelearn::apps::mf {

Status RegisterDatasets(data::DatasetCatalog& catalog) {
  data::DatasetEntry movielens;
  movielens.name = "movielens";
  movielens.relative_path = "movielens/ratings.tsv";
  movielens.format = data::DatasetFormat::kRatingsTsv;
  movielens.sample_noun = "ratings";
  movielens.row_noun = "users";
  movielens.column_noun = "movies";
  return catalog.Add(std::move(movielens));
}

}  // namespace stalelearn::apps::mf
