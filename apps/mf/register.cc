#include "apps/mf/register.h"

#include <fmt/format.h>

#include "apps/mf/mf_app.h"
#include "framework/data/catalog.h"

namespace stalelearn::apps::mf {

Status RegisterApp(runtime::AppRegistry& registry) {
  return registry.Add("mf", [](const runtime::AppContext& context) -> Result<std::unique_ptr<runtime::App>> {
    const proto::Config& config = context.config;
    std::filesystem::path file = config.data().path();
    if (file.empty()) {
      const std::string name = config.data().name().empty() ? "movielens" : config.data().name();
      STALELEARN_ASSIGN_OR_RETURN(data::DatasetEntry dataset, data::FindDataset(name));
      file = data::DatasetPath(dataset, context.data_dir);
      if (!std::filesystem::exists(file)) {
        return NotFound(fmt::format("{}: data set '{}' not fetched; run: deploy/fetch-data.sh {}", file.string(),
                                    name, name));
      }
    }
    STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<MfApp> app, LoadMfApp(config, file));
    return std::unique_ptr<runtime::App>(std::move(app));
  });
}

}  // namespace stalelearn::apps::mf
