#include "apps/lda/register.h"

#include <fmt/format.h>

#include <cmath>

#include "apps/lda/datasets.h"
#include "apps/lda/lda_app.h"

namespace stalelearn::apps::lda {

Status ResolveConfig(LdaConfig& lda, proto::Config& config) {
  if (lda.topics() == 0) lda.set_topics(20);
  if (lda.alpha() == 0) lda.set_alpha(0.5);
  if (lda.beta() == 0) lda.set_beta(0.1);
  if (lda.sampler().empty()) lda.set_sampler("sparse");
  if (lda.eval_sweeps() == 0) lda.set_eval_sweeps(10);
  if (config.data().name().empty() && config.data().path().empty()) config.mutable_data()->set_name("brown");
  if (lda.topics() < 1 || lda.topics() > 100000) {
    return InvalidArgument(fmt::format("app.lda.topics must be in [1, 100000], got {}", lda.topics()));
  }
  if (!(lda.alpha() > 0) || !std::isfinite(lda.alpha())) {
    return InvalidArgument(fmt::format("app.lda.alpha must be > 0, got {}", lda.alpha()));
  }
  if (!(lda.beta() > 0) || !std::isfinite(lda.beta())) {
    return InvalidArgument(fmt::format("app.lda.beta must be > 0, got {}", lda.beta()));
  }
  if (lda.sampler() != "sparse" && lda.sampler() != "plain") {
    return InvalidArgument(fmt::format("app.lda.sampler must be \"sparse\" or \"plain\", got \"{}\"", lda.sampler()));
  }
  if (lda.eval_sweeps() < 1) {
    return InvalidArgument(fmt::format("app.lda.eval_sweeps must be >= 1, got {}", lda.eval_sweeps()));
  }
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
