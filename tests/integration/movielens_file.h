// Where deploy/fetch-data.sh put MovieLens ($STALELEARN_DATA, else
// ~/.cache/stalelearn), for the integration tests that train MF on it and
// skip when it is not fetched. Header-only: include it from tests that link
// stalelearn_app_mf.
#pragma once

#include <filesystem>

#include "apps/mf/datasets.h"
#include "framework/core/error.h"
#include "framework/data/catalog.h"
#include "tests/unit/data/test_files.h"

namespace stalelearn::testing {

inline std::filesystem::path MovieLensFile() {
  data::DatasetCatalog catalog;
  ThrowIfError(apps::mf::RegisterDatasets(catalog));
  return data::DatasetPath(*ValueOrThrow(catalog.Find("movielens")), data::testing::FetchedDataDir());
}

}  // namespace stalelearn::testing
