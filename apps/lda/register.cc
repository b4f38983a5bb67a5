#include "apps/lda/register.h"

#include "apps/lda/datasets.h"
#include "apps/lda/lda_app.h"
#include "framework/core/field_rules.h"

namespace stalelearn::apps::lda {

// Defaults and ranges are declared in lda_config.proto; the one generic
// resolver applies them (again, harmlessly, after the config loader did:
// this is also called on sections of configs built in code).
Status ResolveConfig(LdaConfig& lda, proto::Config& config) {
  STALELEARN_RETURN_IF_ERROR(config::ResolveFieldRules(lda, "app.lda"));
  if (config.data().name().empty() && config.data().path().empty()) config.mutable_data()->set_name("brown");
  return Status::Ok();
}

namespace {

Result<std::unique_ptr<runtime::App>> Load(const runtime::AppContext& context) {
  STALELEARN_ASSIGN_OR_RETURN(const std::filesystem::path file, context.DataFile());
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<LdaApp> app, LoadLdaApp(context.config, file));
  return std::unique_ptr<runtime::App>(std::move(app));
}

}  // namespace

Status RegisterApp(runtime::Registries& registries) {
  STALELEARN_RETURN_IF_ERROR(RegisterDatasets(registries.datasets));
  return registries.apps.Add<LdaConfig>("lda", ResolveConfig, Load);
}

}  // namespace stalelearn::apps::lda
