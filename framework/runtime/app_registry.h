// Apps registered by name (config app.name), explicitly at start-up like
// backends and modes. An app brings everything that names it: its config
// message (protobuf, in apps/<name>/), its defaults and validation, and a
// factory that loads its data. The registry turns the config messages into
// the config schema (framework/core/config_schema.h) so that
// `app { name: "x" x { ... } }` and `--set app.x.field=v` work.
//
//   Status RegisterApp(runtime::Registries& r) {       // in apps/x/register.cc
//     return r.apps.Add<XConfig>("x", ResolveXConfig, LoadXApp);
//   }
//
// Thread-safety: Add during start-up only; the rest may then be called from
// any thread.
#pragma once

#include <google/protobuf/message.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "framework/core/config_loader.h"
#include "framework/core/config_schema.h"
#include "framework/core/status.h"
#include "framework/data/catalog.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"

namespace stalelearn::runtime {

struct AppContext {
  const proto::Config& config;            // resolved; app.params holds the app's section
  std::filesystem::path data_dir;         // resolved once by the program
  const data::DatasetCatalog& datasets;   // data sets by name (data.name)

  // The file to load: data.path if set, else data.name's file in data_dir.
  Result<std::filesystem::path> DataFile() const;
};

// Loads the app's data and returns it ready to train.
using AppFactory = std::function<Result<std::unique_ptr<App>>(const AppContext&)>;

class AppRegistry {
 public:
  // `prototype`: the app's config message (e.g. &MyConfig::default_instance()).
  // kInvalidArgument if `name` is taken or not an identifier.
  Status Add(std::string name, const google::protobuf::Message& prototype,
             std::function<Status(google::protobuf::Message&, proto::Config&)> resolve, AppFactory factory);

  // Typed form: `resolve(params, config)` fills the defaults of the app's
  // section (and of framework fields it defaults) and validates them.
  template <class ConfigMessage>
  Status Add(std::string name, std::function<Status(ConfigMessage&, proto::Config&)> resolve, AppFactory factory) {
    return Add(
        std::move(name), ConfigMessage::default_instance(),
        [resolve = std::move(resolve)](google::protobuf::Message& params, proto::Config& config) -> Status {
          return resolve ? resolve(static_cast<ConfigMessage&>(params), config) : Status::Ok();
        },
        std::move(factory));
  }

  // kInvalidArgument naming the known apps if `name` is unknown.
  Result<std::unique_ptr<App>> Create(std::string_view name, const AppContext& context) const;
  std::string KnownNames() const { return schema_.KnownApps(); }
  // The config schema with every registered app's section.
  const config::ConfigSchema& schema() const { return schema_; }

 private:
  config::ConfigSchema schema_;
  std::map<std::string, AppFactory, std::less<>> factories_;
};

}  // namespace stalelearn::runtime
