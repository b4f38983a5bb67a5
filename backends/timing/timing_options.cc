#include "backends/timing/timing_options.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <string_view>

#include "framework/core/field_rules.h"

namespace stalelearn::backends::timing {
namespace {

constexpr std::string_view kInnerPrefix = "inner.";

// "inner, memory, ..., inner.<key>": the section's fields, in their order.
std::string KnownKeys() {
  const google::protobuf::Descriptor* d = stalelearn::timing::TimingBackendOptions::descriptor();
  std::string known;
  for (int i = 0; i < d->field_count(); ++i) known += d->field(i)->name() + ", ";
  return known + "inner.<key>";
}

Result<ScheduleMode> ScheduleOf(const std::string& value) {
  if (value == "auto") return ScheduleMode::kAuto;
  if (value == "virtual-time") return ScheduleMode::kVirtualTime;
  if (value == "none") return ScheduleMode::kNone;
  return InvalidArgument(fmt::format("option schedule: '{}' is not auto, virtual-time or none", value));
}

Result<TimingOptions> FromSection(const google::protobuf::Any* params) {
  stalelearn::timing::TimingBackendOptions section;
  if (params != nullptr && !params->UnpackTo(&section)) {
    return InvalidArgument(fmt::format("backend.params holds {}, not the timing backend's options", params->type_url()));
  }
  // A section from the config loader is resolved already (this is then a
  // no-op); a backend created directly gets the declared defaults here.
  STALELEARN_RETURN_IF_ERROR(config::ResolveFieldRules(section, "backend.timing"));
  STALELEARN_RETURN_IF_ERROR(ResolveTimingSection(section));
  TimingOptions parsed;
  parsed.inner = section.inner();
  parsed.memory = section.memory();
  parsed.link = section.link();
  parsed.compute = section.compute();
  parsed.preset_dir = section.preset_dir();
  STALELEARN_ASSIGN_OR_RETURN(parsed.schedule, ScheduleOf(section.schedule()));
  parsed.link_bandwidth_gb_per_s = section.link_bandwidth_gb_per_s();
  parsed.quantum_ns = section.quantum_ns();
  parsed.cores = section.cores();
  parsed.shared_ports = section.shared_ports();
  return parsed;
}

}  // namespace

Status ResolveTimingSection(stalelearn::timing::TimingBackendOptions& section) {
  if (section.inner() == "timing") return InvalidArgument("backend.timing.inner: 'timing' cannot wrap itself");
  return Status::Ok();
}

Result<TimingOptions> ParseTimingOptions(const google::protobuf::Any* params,
                                         const std::map<std::string, std::string>& options) {
  if (params != nullptr && !options.empty()) {
    return InvalidArgument("options given both as a section and as key=value options");
  }
  STALELEARN_ASSIGN_OR_RETURN(TimingOptions parsed, FromSection(params));
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
      STALELEARN_ASSIGN_OR_RETURN(parsed.schedule, ScheduleOf(value));
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
    } else if (key == "shared_ports") {
      if (value != "true" && value != "false") {
        return InvalidArgument(fmt::format("option shared_ports: '{}' is not true or false", value));
      }
      parsed.shared_ports = value == "true";
    } else {
      return InvalidArgument(fmt::format("unknown option '{}' (known: {})", key, KnownKeys()));
    }
  }
  return parsed;
}

}  // namespace stalelearn::backends::timing
