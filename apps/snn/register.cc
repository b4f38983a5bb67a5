#include "apps/snn/register.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "apps/snn/datasets.h"
#include "apps/snn/snn_app.h"

namespace stalelearn::apps::snn {
namespace {

bool Finite(float x) { return std::isfinite(x); }

Status Require(bool ok, std::string_view field, std::string_view rule, float got) {
  if (ok) return Status::Ok();
  return InvalidArgument(fmt::format("app.snn.{} must be {}, got {}", field, rule, got));
}

}  // namespace

Result<std::vector<int>> ParseHiddenWidths(const std::string& text) {
  std::vector<int> widths;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int width = 0;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), width);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || width < 1 || width > 65536) {
      return InvalidArgument(fmt::format("app.snn.hidden must be 1 to 3 comma-separated widths in [1, 65536], got \"{}\"", text));
    }
    widths.push_back(width);
    start = comma + 1;
  }
  if (widths.size() > 3) {
    return InvalidArgument(fmt::format("app.snn.hidden has {} layers (\"{}\"); 1 to 3 allowed", widths.size(), text));
  }
  return widths;
}

Status ResolveConfig(SnnConfig& c, proto::Config& config) {
  if (c.hidden().empty()) c.set_hidden("128");
  if (c.steps() == 0) c.set_steps(16);
  if (c.beta() == 0) c.set_beta(0.9f);
  if (c.threshold() == 0) c.set_threshold(1.0f);
  if (c.slope() == 0) c.set_slope(5.0f);
  if (c.window() == 0) c.set_window(0.5f);
  if (c.max_activity() == 0) c.set_max_activity(1.0f);
  if (c.readout().empty()) c.set_readout("membrane");
  if (c.count_scale() == 0) c.set_count_scale(0.5f);
  if (c.coding().empty()) c.set_coding("latency");
  if (c.latency_cutoff() == 0) c.set_latency_cutoff(0.1f);
  if (c.propagation().empty()) c.set_propagation("sparse");
  if (c.learning_rate() == 0) c.set_learning_rate(0.05f);
  if (c.init_scale() == 0) c.set_init_scale(2.0f);
  if (config.data().name().empty() && config.data().path().empty()) config.mutable_data()->set_name("mnist");

  STALELEARN_ASSIGN_OR_RETURN(std::vector<int> widths, ParseHiddenWidths(c.hidden()));
  (void)widths;
  if (c.steps() < 1 || c.steps() > 10000) return InvalidArgument(fmt::format("app.snn.steps must be in [1, 10000], got {}", c.steps()));
  STALELEARN_RETURN_IF_ERROR(Require(c.beta() > 0 && c.beta() < 1, "beta", "in (0, 1)", c.beta()));
  STALELEARN_RETURN_IF_ERROR(Require(c.threshold() > 0 && Finite(c.threshold()), "threshold", "> 0", c.threshold()));
  STALELEARN_RETURN_IF_ERROR(Require(c.slope() > 0 && Finite(c.slope()), "slope", "> 0", c.slope()));
  STALELEARN_RETURN_IF_ERROR(Require(c.window() > 0 && Finite(c.window()), "window", "> 0", c.window()));
  STALELEARN_RETURN_IF_ERROR(
      Require(c.max_activity() > 0 && c.max_activity() <= 1, "max_activity", "in (0, 1]", c.max_activity()));
  STALELEARN_RETURN_IF_ERROR(Require(c.count_scale() > 0 && Finite(c.count_scale()), "count_scale", "> 0", c.count_scale()));
  STALELEARN_RETURN_IF_ERROR(
      Require(c.latency_cutoff() > 0 && c.latency_cutoff() < 1, "latency_cutoff", "in (0, 1)", c.latency_cutoff()));
  STALELEARN_RETURN_IF_ERROR(Require(c.learning_rate() > 0 && Finite(c.learning_rate()), "learning_rate", "> 0", c.learning_rate()));
  STALELEARN_RETURN_IF_ERROR(Require(c.init_scale() > 0 && Finite(c.init_scale()), "init_scale", "> 0", c.init_scale()));
  const auto one_of = [](std::string_view field, const std::string& got, std::string_view a, std::string_view b) {
    return got == a || got == b ? Status::Ok()
                                : InvalidArgument(fmt::format("app.snn.{} must be \"{}\" or \"{}\", got \"{}\"", field, a, b, got));
  };
  STALELEARN_RETURN_IF_ERROR(one_of("readout", c.readout(), "membrane", "spike_count"));
  STALELEARN_RETURN_IF_ERROR(one_of("coding", c.coding(), "latency", "rate"));
  STALELEARN_RETURN_IF_ERROR(one_of("propagation", c.propagation(), "sparse", "dense"));
  if (c.train_limit() < 0 || c.test_limit() < 0) {
    return InvalidArgument(fmt::format("app.snn.train_limit and test_limit must be >= 0, got {} and {}", c.train_limit(),
                                       c.test_limit()));
  }
  return Status::Ok();
}

namespace {

Result<std::unique_ptr<runtime::App>> Load(const runtime::AppContext& context) {
  STALELEARN_ASSIGN_OR_RETURN(const std::filesystem::path file, context.DataFile());
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<SnnApp> app, LoadSnnApp(context.config, file));
  return std::unique_ptr<runtime::App>(std::move(app));
}

}  // namespace

Status RegisterApp(runtime::Registries& registries) {
  STALELEARN_RETURN_IF_ERROR(RegisterDatasets(registries.datasets));
  return registries.apps.Add<SnnConfig>("snn", ResolveConfig, Load);
}

}  // namespace stalelearn::apps::snn
