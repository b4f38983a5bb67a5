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
  STALELEARN_RETURN_IF_ERROR(catalog.Add(std::move(movielens)));

  // Generated, not fetched: any size, with a known noise floor (synth.txt).
  data::DatasetEntry synth;
  synth.name = "synth";
  synth.relative_path = "synth/ratings.tsv";
  synth.format = data::DatasetFormat::kRatingsTsv;
  synth.sample_noun = "ratings";
  synth.row_noun = "users";
  synth.column_noun = "items";
  synth.fetch_command =
      "stalelearn data synth ratings --users 200000 --items 1000000 --ratings 20000000 --rank 20 --seed 1 "
      "--out <data dir>/synth";
  return catalog.Add(std::move(synth));
}

}  // namespace stalelearn::apps::mf
