#include "apps/cli/builtin_datasets.h"

#include "apps/lr/datasets.h"
#include "apps/mf/datasets.h"

namespace stalelearn::cli {

Result<data::DatasetCatalog> BuiltinDatasets() {
  data::DatasetCatalog catalog;
  STALELEARN_RETURN_IF_ERROR(apps::mf::RegisterDatasets(catalog));
  STALELEARN_RETURN_IF_ERROR(apps::lr::RegisterDatasets(catalog));
  return catalog;
}

}  // namespace stalelearn::cli
