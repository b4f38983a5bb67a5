#include "framework/runtime/consistency_mode.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

namespace stalelearn::runtime {
namespace {

std::string Upper(std::string_view name) {
  std::string out(name);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

}  // namespace

Status ModeRegistry::Add(ModeDefinition mode) {
  if (mode.name.empty() || mode.name != Upper(mode.name)) {
    return InvalidArgument(fmt::format("consistency mode name '{}' must be non-empty upper-case", mode.name));
  }
  if (!mode.create) return InvalidArgument(fmt::format("consistency mode '{}' has no factory", mode.name));
  std::string name = mode.name;
  if (!modes_.emplace(name, std::move(mode)).second) {
    return InvalidArgument(fmt::format("consistency mode '{}' registered twice", name));
  }
  return Status::Ok();
}

Result<const ModeDefinition*> ModeRegistry::Find(std::string_view name) const {
  const auto it = modes_.find(Upper(name));
  if (it == modes_.end()) {
    return InvalidArgument(fmt::format("consistency.mode: unknown mode '{}' (modes: {})", name, KnownNames()));
  }
  return &it->second;
}

std::string ModeRegistry::KnownNames() const {
  std::vector<std::string> names;
  for (const auto& [name, mode] : modes_) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace stalelearn::runtime
