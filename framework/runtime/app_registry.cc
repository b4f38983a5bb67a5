#include "framework/runtime/app_registry.h"

#include <fmt/format.h>

namespace stalelearn::runtime {

Result<std::filesystem::path> AppContext::DataFile() const {
  if (!config.data().path().empty()) return std::filesystem::path(config.data().path());
  return data::ResolveDatasetFile(datasets, config.data().name(), data_dir);
}

Status AppRegistry::Add(std::string name, const google::protobuf::Message& prototype,
                        std::function<Status(google::protobuf::Message&, proto::Config&)> resolve,
                        AppFactory factory) {
  if (!factory) return InvalidArgument(fmt::format("app '{}' has no factory", name));
  STALELEARN_RETURN_IF_ERROR(schema_.AddApp({name, &prototype, std::move(resolve)}));
  factories_.emplace(std::move(name), std::move(factory));
  return Status::Ok();
}

Result<std::unique_ptr<App>> AppRegistry::Create(std::string_view name, const AppContext& context) const {
  const auto it = factories_.find(name);
  if (it == factories_.end()) {
    return InvalidArgument(fmt::format("app.name: unknown app '{}' (apps: {})", name, KnownNames()));
  }
  return it->second(context);
}

}  // namespace stalelearn::runtime
