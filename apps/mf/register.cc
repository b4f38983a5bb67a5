#include "apps/mf/register.h"

#include "apps/mf/datasets.h"
#include "apps/mf/mf_app.h"
#include "framework/core/field_rules.h"
#include "framework/data/catalog.h"

namespace stalelearn::apps::mf {

// Defaults and ranges are declared in mf_config.proto; the one generic
// resolver applies them (again, harmlessly, after the config loader did:
// this is also called on sections of configs built in code).
Status ResolveConfig(MfConfig& mf, proto::Config& config) {
  STALELEARN_RETURN_IF_ERROR(config::ResolveFieldRules(mf, "app.mf"));
  if (config.data().name().empty() && config.data().path().empty()) config.mutable_data()->set_name("movielens");
  return Status::Ok();
}

namespace {

Result<std::unique_ptr<runtime::App>> Load(const runtime::AppContext& context) {
  STALELEARN_ASSIGN_OR_RETURN(const std::filesystem::path file, context.DataFile());
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<MfApp> app, LoadMfApp(context.config, file));
  return std::unique_ptr<runtime::App>(std::move(app));
}

}  // namespace

Status RegisterApp(runtime::Registries& registries) {
  STALELEARN_RETURN_IF_ERROR(RegisterDatasets(registries.datasets));
  return registries.apps.Add<MfConfig>("mf", ResolveConfig, Load);
}

}  // namespace stalelearn::apps::mf
