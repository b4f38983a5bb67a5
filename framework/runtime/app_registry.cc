#include "framework/runtime/app_registry.h"

#include <fmt/format.h>

namespace stalelearn::runtime {

Status AppRegistry::Add(std::string name, AppFactory factory) {
  if (factories_.contains(name)) return InvalidArgument(fmt::format("app '{}' registered twice", name));
  factories_.emplace(std::move(name), std::move(factory));
  return Status::Ok();
}

Result<std::unique_ptr<App>> AppRegistry::Create(std::string_view name, const AppContext& context) const {
  const auto it = factories_.find(name);
  if (it == factories_.end()) {
    return NotFound(fmt::format("unknown app '{}' (app.name); known apps: {}", name, KnownNames()));
  }
  return it->second(context);
}

std::string AppRegistry::KnownNames() const {
  std::string names;
  for (const auto& [name, factory] : factories_) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace stalelearn::runtime
