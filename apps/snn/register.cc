#include "apps/snn/register.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "apps/snn/datasets.h"
#include "apps/snn/snn_app.h"
#include "framework/core/field_rules.h"

namespace stalelearn::apps::snn {

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

// Defaults and ranges are declared in snn_config.proto; the one generic
// resolver applies them (again, harmlessly, after the config loader did:
// this is also called on sections of configs built in code).
Status ResolveConfig(SnnConfig& c, proto::Config& config) {
  STALELEARN_RETURN_IF_ERROR(config::ResolveFieldRules(c, "app.snn"));
  if (config.data().name().empty() && config.data().path().empty()) config.mutable_data()->set_name("mnist");
  return ParseHiddenWidths(c.hidden()).status();
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
