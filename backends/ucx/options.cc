#include "backends/ucx/options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

namespace stalelearn::backends::ucx {
namespace {

// Backend option -> UCX configuration name.
const std::map<std::string, std::string>& KnownOptions() {
  static const std::map<std::string, std::string> known = {
      {"net_devices", "NET_DEVICES"},
      {"tls", "TLS"},
  };
  return known;
}

constexpr const char* kProgressThread = "progress_thread";

std::string KnownOptionNames() {
  std::vector<std::string> names = {kProgressThread};
  for (const auto& [name, ucx_name] : KnownOptions()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

Result<UcxOptions> ParseUcxOptions(const std::map<std::string, std::string>& options) {
  UcxOptions parsed;
  for (const auto& [name, value] : options) {
    if (name == kProgressThread) {
      if (value != "on" && value != "off") {
        return InvalidArgument(fmt::format("option '{}' is '{}', expected on or off", name, value));
      }
      parsed.progress_thread = value == "on";
      continue;
    }
    auto known = KnownOptions().find(name);
    if (known == KnownOptions().end()) {
      return InvalidArgument(fmt::format("unknown option '{}' (known: {})", name, KnownOptionNames()));
    }
    if (value.empty()) return InvalidArgument(fmt::format("option '{}' has an empty value", name));
    parsed.ucx_settings[known->second] = value;
  }
  return parsed;
}

}  // namespace stalelearn::backends::ucx
