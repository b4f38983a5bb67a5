#include "backends/timing/timing_options.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <string_view>

namespace stalelearn::backends::timing {
namespace {

constexpr std::string_view kInnerPrefix = "inner.";
constexpr std::string_view kKnownKeys = "inner, memory, link, compute, preset_dir, schedule, link_bandwidth_gb_per_s, quantum_ns, cores, inner.<key>";

}  // namespace

Result<TimingOptions> ParseTimingOptions(const std::map<std::string, std::string>& options) {
  TimingOptions parsed;
  for (const auto& [key, value] : options) {
    if (key.starts_with(kInnerPrefix) && key.size() > kInnerPrefix.size()) {
      parsed.inner_options[key.substr(kInnerPrefix.size())] = value;
    } else if (key == "inner") {
      if (value == "timing") return InvalidArgument("option inner: 'timing' cannot wrap itself");
      parsed.inner = value;
    } else if (key == "memory") {
      parsed.memory = value;
    } else if (key == "link") {
      parsed.link = value;
    } else if (key == "compute") {
      parsed.compute = value;
    } else if (key == "preset_dir") {
      parsed.preset_dir = value;
    } else if (key == "schedule") {
      if (value == "auto") parsed.schedule = ScheduleMode::kAuto;
      else if (value == "virtual-time") parsed.schedule = ScheduleMode::kVirtualTime;
      else if (value == "none") parsed.schedule = ScheduleMode::kNone;
      else return InvalidArgument(fmt::format("option schedule: '{}' is not auto, virtual-time or none", value));
    } else if (key == "link_bandwidth_gb_per_s") {
      char* end = nullptr;
      parsed.link_bandwidth_gb_per_s = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(parsed.link_bandwidth_gb_per_s > 0) ||
          !std::isfinite(parsed.link_bandwidth_gb_per_s)) {
        return InvalidArgument(fmt::format("option link_bandwidth_gb_per_s: '{}' is not a number > 0", value));
      }
    } else if (key == "quantum_ns") {
      char* end = nullptr;
      parsed.quantum_ns = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(parsed.quantum_ns >= 0) || !std::isfinite(parsed.quantum_ns)) {
        return InvalidArgument(fmt::format("option quantum_ns: '{}' is not a number >= 0", value));
      }
    } else if (key == "cores") {
      char* end = nullptr;
      const long cores = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || cores < 0 || cores > 1'000'000) {
        return InvalidArgument(fmt::format("option cores: '{}' is not a whole number >= 0", value));
      }
      parsed.cores = static_cast<int>(cores);
    } else {
      return InvalidArgument(fmt::format("unknown option '{}' (known: {})", key, kKnownKeys));
    }
  }
  return parsed;
}

void AddTimingConfig(const proto::TimingConfig& timing, std::map<std::string, std::string>& options) {
  auto add = [&](const char* key, const std::string& value) {
    if (!value.empty()) options.emplace(key, value);  // emplace keeps an explicit option
  };
  add("memory", timing.memory());
  add("link", timing.link());
  add("compute", timing.compute());
  add("preset_dir", timing.preset_dir());
}

}  // namespace stalelearn::backends::timing
