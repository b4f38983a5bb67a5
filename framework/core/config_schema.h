// The shape of a run's config text: the framework's Config plus one section
// per registered app, so that the framework names no app. An app registers
// its own config message (protobuf, in apps/<name>/) with a resolve function
// (defaults and validation); a config then reads
//
//   app { name: "topics" topics { k: 20 alpha: 0.1 } }
//   training { epochs: 20 }
//
// and `--set app.topics.k=30` works like any framework field. Behind the
// scenes ConfigReader builds, at run time, a descriptor in which `app` has
// one field per registered section (a DescriptorPool layered over the
// generated pool); the parsed text is converted into the typed proto::Config
// with the chosen app's resolved section packed into `app.params`
// (config_loader.h).
//
//   ConfigSchema schema;
//   ThrowIfError(schema.AddApp({"topics", &TopicsConfig::default_instance(), ResolveTopics}));
//   auto config = config::LoadConfig("run.pbtxt", overrides, schema);
//
// Thread-safety: AddApp during start-up only; a built ConfigReader is
// immutable and may be used from any thread. Lifetimes: a ConfigReader keeps
// no reference to the schema; the section prototypes are generated default
// instances and live for the program.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "framework/proto/config.pb.h"

namespace stalelearn::config {

struct AppSection {
  std::string name;                                  // the app's name, also its section's field name
  const google::protobuf::Message* prototype = nullptr;  // the app's config message (default instance)
  // Fills defaults for zero fields of `params` (and of framework fields the
  // app defaults, e.g. data.name when empty) and validates them; errors name
  // the field as "app.<name>.<field>". May be empty (no defaults, no checks).
  std::function<Status(google::protobuf::Message& params, proto::Config& config)> resolve;
};

class ConfigSchema {
 public:
  // kInvalidArgument if the name is taken, empty, not an identifier, or the
  // prototype is missing.
  Status AddApp(AppSection section);
  const std::vector<AppSection>& apps() const { return apps_; }
  // "a, b, c" (for errors), or "(none registered)".
  std::string KnownApps() const;
  const AppSection* FindApp(std::string_view name) const;

 private:
  std::vector<AppSection> apps_;
};

// Parses config text into a message of the schema's full shape and converts
// it into the typed Config. Not copyable (owns the descriptor pool).
class ConfigReader {
 public:
  static Result<std::unique_ptr<ConfigReader>> Make(const ConfigSchema& schema);

  // Parses `text` (errors name `source_name`:line:column).
  Result<std::unique_ptr<google::protobuf::Message>> Parse(std::string_view text, std::string_view source_name) const;
  // An empty message of the full shape.
  std::unique_ptr<google::protobuf::Message> New() const;
  // The typed Config of a parsed message: framework fields copied, the
  // selected app's section resolved and packed into app.params (unresolved
  // framework defaults: see ResolveDefaults).
  Result<proto::Config> ToConfig(const google::protobuf::Message& full) const;

  ConfigReader(const ConfigReader&) = delete;
  ConfigReader& operator=(const ConfigReader&) = delete;

 private:
  explicit ConfigReader(const ConfigSchema& schema);

  std::vector<AppSection> apps_;
  std::string known_apps_;
  google::protobuf::DescriptorPool pool_;
  mutable google::protobuf::DynamicMessageFactory factory_;  // GetPrototype caches; thread-safe
  const google::protobuf::Descriptor* config_type_ = nullptr;
  const google::protobuf::Descriptor* app_type_ = nullptr;
};

}  // namespace stalelearn::config
