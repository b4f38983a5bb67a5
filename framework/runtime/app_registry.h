// Apps created by name (config app.name), registered explicitly at start-up
// like backends (framework/README.md, convention 4): the program calls each app's Register function.
//
// Thread-safety: Add() during start-up only; Create() and KnownNames() may
// then be called from any thread.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "framework/core/status.h"
#include "framework/proto/config.pb.h"
#include "framework/runtime/app.h"

namespace stalelearn::runtime {

struct AppContext {
  const proto::Config& config;       // resolved
  std::filesystem::path data_dir;    // resolved once by the program (catalog.h)
};

// Loads the app's data and returns it ready to train.
using AppFactory = std::function<Result<std::unique_ptr<App>>(const AppContext&)>;

class AppRegistry {
 public:
  // kInvalidArgument if `name` is taken.
  Status Add(std::string name, AppFactory factory);
  // kNotFound naming the known apps if `name` is unknown.
  Result<std::unique_ptr<App>> Create(std::string_view name, const AppContext& context) const;
  std::string KnownNames() const;

 private:
  std::map<std::string, AppFactory, std::less<>> factories_;
};

}  // namespace stalelearn::runtime
