#include "apps/lr/register.h"

#include "apps/lr/datasets.h"
#include "apps/lr/lr_app.h"
#include "framework/core/field_rules.h"

namespace stalelearn::apps::lr {

// Defaults and ranges are declared in lr_config.proto; the one generic
// resolver applies them (again, harmlessly, after the config loader did:
// this is also called on sections of configs built in code).
Status ResolveConfig(LrConfig& lr, proto::Config& config) {
  STALELEARN_RETURN_IF_ERROR(config::ResolveFieldRules(lr, "app.lr"));
  if (config.data().name().empty() && config.data().path().empty()) config.mutable_data()->set_name("spam");
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
