#include "backends/ucx/options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <vector>

#include "framework/core/field_rules.h"

namespace stalelearn::backends::ucx {
namespace {

using stalelearn::ucx::UcxBackendOptions;

// "net_devices, progress_thread, tls": the section's fields, sorted.
std::string KnownOptionNames() {
  const google::protobuf::Descriptor* d = UcxBackendOptions::descriptor();
  std::vector<std::string> names;
  for (int i = 0; i < d->field_count(); ++i) names.push_back(d->field(i)->name());
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

// key=value options into the section; the rules and errors of the old map.
Result<UcxBackendOptions> SectionOf(const std::map<std::string, std::string>& options) {
  UcxBackendOptions section;
  for (const auto& [name, value] : options) {
    const google::protobuf::FieldDescriptor* field = UcxBackendOptions::descriptor()->FindFieldByName(name);
    if (field == nullptr) return InvalidArgument(fmt::format("unknown option '{}' (known: {})", name, KnownOptionNames()));
    if (field->number() == UcxBackendOptions::kProgressThreadFieldNumber && value != "on" && value != "off") {
      return InvalidArgument(fmt::format("option '{}' is '{}', expected on or off", name, value));
    }
    if (value.empty()) return InvalidArgument(fmt::format("option '{}' has an empty value", name));
    section.GetReflection()->SetString(&section, field, value);
  }
  return section;
}

}  // namespace

Result<UcxOptions> ParseUcxOptions(const google::protobuf::Any* params,
                                   const std::map<std::string, std::string>& options) {
  UcxBackendOptions section;
  if (params != nullptr) {
    if (!options.empty()) return InvalidArgument("options given both as a section and as key=value options");
    if (!params->UnpackTo(&section)) {
      return InvalidArgument(fmt::format("backend.params holds {}, not the ucx backend's options", params->type_url()));
    }
  } else {
    STALELEARN_ASSIGN_OR_RETURN(section, SectionOf(options));
  }
  // A section from the config loader is resolved already (this is then a
  // no-op); one from key=value options gets the declared defaults here.
  STALELEARN_RETURN_IF_ERROR(config::ResolveFieldRules(section, "backend.ucx"));
  UcxOptions parsed;
  if (!section.tls().empty()) parsed.ucx_settings["TLS"] = section.tls();
  if (!section.net_devices().empty()) parsed.ucx_settings["NET_DEVICES"] = section.net_devices();
  parsed.progress_thread = section.progress_thread() == "on";
  return parsed;
}

}  // namespace stalelearn::backends::ucx
