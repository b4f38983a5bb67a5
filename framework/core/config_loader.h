// Loads a run's Config: protobuf text format, then `--set field.path=value`
// overrides in order, then defaults for zero fields and validation. The result
// is resolved once and passed down as the typed proto (framework/README.md, convention 10).
//
// Every error is one line naming the file (and line:column) or the field, and
// the reason; its code is kInvalidArgument (exit code 2 at the CLI).
// Thread-safety: stateless functions; safe from any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <google/protobuf/message.h>

#include "framework/core/config_schema.h"
#include "framework/core/status.h"
#include "framework/proto/config.pb.h"

namespace stalelearn::config {

// Parses `text` (named `source_name` in errors) as a framework-only Config
// in text format (no app sections; tests and tools).
Result<proto::Config> ParseConfigText(std::string_view text, std::string_view source_name);

// Applies one "a.b.c=value" assignment to a Config (or a ConfigReader's full
// message). Scalars, enums (by name), bools (true/false/1/0), map<string,
// scalar> entries (map.KEY=v) and fields of map<string, message>
// entries (merge.TABLE.policy=adam) are supported; setting a message field
// itself is an error.
Status ApplyOverride(google::protobuf::Message& config, std::string_view assignment);

// Fills the framework's defaults for zero-valued fields and checks ranges;
// names the field. (App sections are resolved by their apps: ConfigReader.)
Status ResolveDefaults(proto::Config& config);
Status Validate(const proto::Config& config);

// Reads `path` (text with the schema's app sections), applies `overrides`
// in order, resolves the app's section and the framework's fields, validates.
Result<proto::Config> LoadConfig(const std::string& path, std::span<const std::string> overrides,
                                 const ConfigSchema& schema);

// The app's resolved section (app.params) as its message type M;
// kInvalidArgument naming the expected type if it holds another.
template <class M>
Result<M> UnpackAppParams(const proto::Config& config) {
  M params;
  if (config.app().has_params() && !config.app().params().UnpackTo(&params)) {
    return InvalidArgument("app.params holds " + config.app().params().type_url() + ", expected " +
                           M::descriptor()->full_name());
  }
  return params;
}

}  // namespace stalelearn::config
