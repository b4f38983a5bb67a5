#include "apps/mf/register.h"

#include <fmt/format.h>

#include "apps/mf/datasets.h"
#include "apps/mf/mf_app.h"
#include "framework/data/catalog.h"

namespace stalelearn::apps::mf {

Status RegisterApp(runtime::AppRegistry& registry) {
  return registry.Add("mf", [](const runtime::AppContext& context) -> Result<std::unique_ptr<runtime::App>> {
    const proto::Config& config = context.config;
    std::filesystem::path file = config.data().path();
    if (file.empty()) {
      const std::string name = config.data().name().empty() ? "movielens" : config.data().name();
      data::DatasetCatalog catalog;
      STALELEARN_RETURN_IF_ERROR(RegisterDatasets(catalog));
      STALELEARN_ASSIGN_OR_RETURN(file, data::ResolveDatasetFile(catalog, name, context.data_dir));
    }
    STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<MfApp> app, LoadMfApp(config, file));
    return std::unique_ptr<runtime::App>(std::move(app));
  });
}

}  // namespace stalelearn::apps::mf
