// The shape of a run's config text: the framework's Config plus one section
// per registered options message, so that the framework names no app,
// backend option or merge policy parameter. Each kind of driver registers a
// name, a typed options message (protobuf, beside its code) and a resolve
// function:
//
//   app { name: "topics" topics { k: 20 alpha: 0.1 } }                  // an app
//   backend { name: "timing" timing { memory: "hmc2" } }                // a backend
//   merge { key: "*" value { policy: "adam" adam { beta1: 0.9 } } }     // a merge policy
//
// and `--set app.topics.k=30`, `--set backend.timing.memory=hbm-pim`,
// `--set merge.w.adam.beta1=0.95` work like any framework field. Behind the
// scenes ConfigReader builds, at run time, a descriptor in which `app`,
// `backend` and every `merge` value have one field per registered section (a
// DescriptorPool layered over the generated pool); the parsed text is
// converted into the typed proto::Config with each chosen section resolved
// and packed into its `params` (google.protobuf.Any).
//
// Resolving a section: its declared field rules first (defaults for zero
// fields, then ranges: framework/core/field_rules.h), then the owner's
// resolve function for what the rules cannot say (fields that depend on each
// other, framework fields the owner defaults).
//
//   ConfigSchema schema;
//   ThrowIfError(schema.Add(SectionKind::kApp, {"topics", &TopicsConfig::default_instance(), ResolveTopics}));
//   auto config = config::LoadConfig("run.pbtxt", overrides, schema);
//
// Consistency modes have no section: every consistency field is generic
// (mode, staleness), so a mode registers a name, a factory and the bound it
// reports (framework/runtime/consistency_mode.h).
//
// Thread-safety: Add during start-up only; a built ConfigReader is
// immutable and may be used from any thread. Lifetimes: a ConfigReader keeps
// no reference to the schema; the section prototypes are generated default
// instances and live for the program.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "framework/proto/config.pb.h"

namespace stalelearn::config {

// Where a section is written: `app`, `backend`, or the value of a `merge` entry.
enum class SectionKind { kApp = 0, kBackend = 1, kMergePolicy = 2 };
inline constexpr int kSectionKinds = 3;

struct Section {
  std::string name;  // the app's, backend's or policy's name, also its section's field name
  const google::protobuf::Message* prototype = nullptr;  // its options message (default instance)
  // After the declared rules: fills what they cannot (and framework fields
  // the owner defaults, e.g. data.name when empty) and validates; errors name
  // the field as "<kind path>.<name>.<field>" (app.x.k, backend.timing.link,
  // merge.w.adam.beta1). May be empty.
  std::function<Status(google::protobuf::Message& params, proto::Config& config)> resolve;
  // A backend that wraps others (timing): when it is chosen, the sections of
  // other backends may be set too; each is resolved into
  // config.backend.wrapped (before this section's resolve, which checks
  // them). Otherwise another backend's section set is an error.
  bool wraps = false;
};
using AppSection = Section;

class ConfigSchema {
 public:
  // kInvalidArgument if the name is taken within its kind, empty, not an
  // identifier, or the prototype is missing.
  Status Add(SectionKind kind, Section section);
  Status AddApp(Section section) { return Add(SectionKind::kApp, std::move(section)); }
  // A registered name of a backend or merge policy, with or without a
  // section: once a kind has names, ToConfig rejects any other in one line.
  void AddName(SectionKind kind, std::string name) { names_[static_cast<int>(kind)].push_back(std::move(name)); }
  const std::vector<std::string>& names(SectionKind kind) const { return names_[static_cast<int>(kind)]; }

  const std::vector<Section>& sections(SectionKind kind) const { return sections_[static_cast<int>(kind)]; }
  const std::vector<Section>& apps() const { return sections(SectionKind::kApp); }
  // "a, b, c" (for errors), or "(none registered)".
  std::string KnownApps() const;
  const Section* FindApp(std::string_view name) const;

 private:
  std::array<std::vector<Section>, kSectionKinds> sections_;
  std::array<std::vector<std::string>, kSectionKinds> names_;
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
  // The typed Config of a parsed message: framework fields copied, every
  // chosen section (the app's, the backend's, each merge entry's policy's)
  // resolved and packed into its params (unresolved framework defaults: see
  // ResolveDefaults).
  Result<proto::Config> ToConfig(const google::protobuf::Message& full) const;

  ConfigReader(const ConfigReader&) = delete;
  ConfigReader& operator=(const ConfigReader&) = delete;

 private:
  explicit ConfigReader(const ConfigSchema& schema);
  // Resolves the section chosen in one container (AppConfig, BackendConfig or
  // a MergeConfig) of `config`; `dynamic` is the same container as parsed.
  Status ResolveSection(SectionKind kind, const google::protobuf::Message& dynamic, google::protobuf::Message& typed,
                        const std::string& path, proto::Config& config) const;

  ConfigSchema schema_;
  google::protobuf::DescriptorPool pool_;
  mutable google::protobuf::DynamicMessageFactory factory_;  // GetPrototype caches; thread-safe
  const google::protobuf::Descriptor* config_type_ = nullptr;
  std::array<const google::protobuf::Descriptor*, kSectionKinds> section_types_{};
};

}  // namespace stalelearn::config
