#include "apps/lr/register.h"

#include <fmt/format.h>

#include <cmath>

#include "apps/lr/datasets.h"
#include "apps/lr/lr_app.h"

namespace stalelearn::apps::lr {

Status ResolveConfig(LrConfig& lr, proto::Config& config) {
  if (lr.learning_rate() == 0) lr.set_learning_rate(0.2f);
  if (lr.l2() == 0) lr.set_l2(1e-6f);
  if (config.data().name().empty() && config.data().path().empty()) config.mutable_data()->set_name("spam");
  if (!(lr.learning_rate() > 0) || !std::isfinite(lr.learning_rate())) {
    return InvalidArgument(fmt::format("app.lr.learning_rate must be > 0, got {}", lr.learning_rate()));
  }
  if (lr.l2() < 0 || !std::isfinite(lr.l2())) {
    return InvalidArgument(fmt::format("app.lr.l2 must be >= 0, got {}", lr.l2()));
  }
  return Status::Ok();
}

namespace {

Result<std::unique_ptr<runtime::App>> Load(const runtime::AppContext& context) {
  STALELEARN_ASSIGN_OR_RETURN(const std::filesystem::path file, context.DataFile());
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<LrApp> app, LoadLrApp(context.config, file));
  return std::unique_ptr<runtime::App>(std::move(app));
}

}  // namespace

Status RegisterApp(runtime::Registries& registries) {
  STALELEARN_RETURN_IF_ERROR(RegisterDatasets(registries.datasets));
  return registries.apps.Add<LrConfig>("lr", ResolveConfig, Load);
}

}  // namespace stalelearn::apps::lr
