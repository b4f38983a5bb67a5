#include "apps/mf/register.h"

#include <fmt/format.h>

#include <cmath>

#include "apps/mf/datasets.h"
#include "apps/mf/mf_app.h"
#include "framework/data/catalog.h"

namespace stalelearn::apps::mf {

Status ResolveConfig(MfConfig& mf, proto::Config& config) {
  if (mf.rank() == 0) mf.set_rank(20);
  if (mf.learning_rate() == 0) mf.set_learning_rate(0.01f);
  if (mf.regularization() == 0) mf.set_regularization(0.05f);
  if (mf.init_scale() == 0) mf.set_init_scale(0.1f);
  if (mf.deal().empty()) mf.set_deal("user");
  if (config.data().name().empty() && config.data().path().empty()) config.mutable_data()->set_name("movielens");
  // Every row of both factor tables holds `rank` floats; past this a typo is
  // a failed terabyte allocation on every rank instead of a config error.
  constexpr int kMaxRank = 1 << 16;
  if (mf.rank() < 1 || mf.rank() > kMaxRank) {
    return InvalidArgument(fmt::format("app.mf.rank must be in [1, {}], got {}", kMaxRank, mf.rank()));
  }
  if (!(mf.learning_rate() > 0) || !std::isfinite(mf.learning_rate())) {
    return InvalidArgument(fmt::format("app.mf.learning_rate must be > 0, got {}", mf.learning_rate()));
  }
  if (mf.regularization() < 0 || !std::isfinite(mf.regularization())) {
    return InvalidArgument(fmt::format("app.mf.regularization must be >= 0, got {}", mf.regularization()));
  }
  if (mf.init_scale() < 0 || !std::isfinite(mf.init_scale())) {
    return InvalidArgument(fmt::format("app.mf.init_scale must be >= 0, got {}", mf.init_scale()));
  }
  if (mf.deal() != "rating" && mf.deal() != "user") {
    return InvalidArgument(fmt::format("app.mf.deal must be \"rating\" or \"user\", got \"{}\"", mf.deal()));
  }
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
