#include "framework/core/config_schema.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <google/protobuf/any.pb.h>

#include <algorithm>
#include <map>
#include <set>

#include "framework/core/field_rules.h"

namespace stalelearn::config {
namespace {

namespace pb = google::protobuf;

constexpr const char* kPackage = "stalelearn.dynamic";
constexpr int kFirstSectionNumber = 100;
// Every container keeps its resolved section in field 15.
constexpr int kParamsNumber = 15;
static_assert(proto::AppConfig::kParamsFieldNumber == kParamsNumber);
static_assert(proto::BackendConfig::kParamsFieldNumber == kParamsNumber);
static_assert(proto::MergeConfig::kParamsFieldNumber == kParamsNumber);
constexpr int kWrappedNumber = 16;  // BackendConfig.wrapped
static_assert(proto::BackendConfig::kWrappedFieldNumber == kWrappedNumber);

// Where each kind's sections go: the container message (copied into the
// dynamic pool as `dynamic_name`, with one field per section), the field
// that names the chosen section, and the path errors use.
struct KindInfo {
  const char* dynamic_name;
  const pb::Descriptor* container;
  const char* name_field;
  const char* path;
};

KindInfo Info(SectionKind kind) {
  switch (kind) {
    case SectionKind::kApp: return {"AppSection", proto::AppConfig::descriptor(), "name", "app"};
    case SectionKind::kBackend: return {"BackendSection", proto::BackendConfig::descriptor(), "name", "backend"};
    case SectionKind::kMergePolicy: return {"MergeSection", proto::MergeConfig::descriptor(), "policy", "merge"};
  }
  return {};
}

constexpr std::array<SectionKind, kSectionKinds> kKinds = {SectionKind::kApp, SectionKind::kBackend,
                                                           SectionKind::kMergePolicy};

std::string DynamicName(SectionKind kind) { return fmt::format(".{}.{}", kPackage, Info(kind).dynamic_name); }

bool IsIdentifier(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  return std::ranges::all_of(name, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Proto3 strings must be UTF-8: protobuf refuses to convert a message holding
// another string, which ToConfig would report as an internal error (found by
// fuzzing: `name: "\377"`). Structural check of RFC 3629 (no overlongs, no
// surrogates, at most U+10FFFF).
bool IsValidUtf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    int extra = 0;
    unsigned char min = 0x80, max = 0xBF;  // allowed range of the first continuation byte
    if (lead < 0x80) {
      extra = 0;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      extra = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      extra = 2;
      if (lead == 0xE0) min = 0xA0;
      if (lead == 0xED) max = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      extra = 3;
      if (lead == 0xF0) min = 0x90;
      if (lead == 0xF4) max = 0x8F;
    } else {
      return false;
    }
    if (text.size() - i <= static_cast<std::size_t>(extra)) return false;
    for (int k = 1; k <= extra; ++k) {
      const unsigned char c = byte(i + k);
      if (k == 1 ? (c < min || c > max) : (c < 0x80 || c > 0xBF)) return false;
    }
    i += static_cast<std::size_t>(extra) + 1;
  }
  return true;
}

// The path of the first string field of `message` (recursively) that is not
// valid UTF-8, or "" if there is none.
std::string FindInvalidUtf8(const pb::Message& message, const std::string& prefix) {
  const pb::Reflection& r = *message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  r.ListFields(message, &fields);
  for (const pb::FieldDescriptor* f : fields) {
    const std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
    const int count = f->is_repeated() ? r.FieldSize(message, f) : 1;
    for (int k = 0; k < count; ++k) {
      if (f->type() == pb::FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string& value = f->is_repeated() ? r.GetRepeatedStringReference(message, f, k, &scratch)
                                                    : r.GetStringReference(message, f, &scratch);
        if (!IsValidUtf8(value)) return path;
      } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& sub = f->is_repeated() ? r.GetRepeatedMessage(message, f, k) : r.GetMessage(message, f);
        if (std::string found = FindInvalidUtf8(sub, path); !found.empty()) return found;
      }
    }
  }
  return "";
}

// Keeps the first error protobuf reports, as "source:line:column: message",
// with the run-time type names replaced by what the user wrote.
class UserNamedErrorCollector : public pb::io::ErrorCollector {
 public:
  UserNamedErrorCollector(std::string_view source, std::string known_apps)
      : source_(source), known_apps_(std::move(known_apps)) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!first_.empty()) return;
    std::string text = message;
    Replace(text, fmt::format("\"{}.AppSection\"", kPackage), fmt::format("app (apps: {})", known_apps_));
    for (SectionKind kind : {SectionKind::kBackend, SectionKind::kMergePolicy}) {
      Replace(text, DynamicName(kind).substr(1), Info(kind).container->full_name());
    }
    Replace(text, fmt::format("{}.Config", kPackage), "stalelearn.proto.Config");
    first_ = fmt::format("{}:{}:{}: {}", source_, line + 1, column + 1, text);
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  static void Replace(std::string& text, const std::string& from, const std::string& to) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
      text.replace(at, from.size(), to);
    }
  }
  std::string source_;
  std::string known_apps_;
  std::string first_;
};

// Rewrites type references of a copied message: whole names in `exact`, and
// names under `prefix_from` (the original's nested types) into the copy's.
void Retarget(pb::DescriptorProto& message, const std::map<std::string, std::string>& exact,
              const std::string& prefix_from, const std::string& prefix_to) {
  for (pb::FieldDescriptorProto& field : *message.mutable_field()) {
    field.clear_options();  // the declared rules apply to the typed messages, not to this copy
    if (auto it = exact.find(field.type_name()); it != exact.end()) {
      field.set_type_name(it->second);
    } else if (field.type_name().rfind(prefix_from, 0) == 0) {
      field.set_type_name(prefix_to + field.type_name().substr(prefix_from.size()));
    }
  }
  for (pb::DescriptorProto& nested : *message.mutable_nested_type()) Retarget(nested, exact, prefix_from, prefix_to);
}

pb::FieldDescriptorProto* AddMessageField(pb::DescriptorProto& message, const std::string& name, int number,
                                          const std::string& type) {
  pb::FieldDescriptorProto* f = message.add_field();
  f->set_name(name);
  f->set_number(number);
  f->set_type(pb::FieldDescriptorProto::TYPE_MESSAGE);
  f->set_label(pb::FieldDescriptorProto::LABEL_OPTIONAL);
  f->set_type_name("." + type);
  return f;
}

}  // namespace

Status ConfigSchema::Add(SectionKind kind, Section section) {
  const char* what = Info(kind).path;
  if (!IsIdentifier(section.name)) {
    return InvalidArgument(fmt::format("{} name '{}' must be an identifier ([A-Za-z_][A-Za-z0-9_]*)", what, section.name));
  }
  if (section.prototype == nullptr) return InvalidArgument(fmt::format("{} '{}' has no config message", what, section.name));
  auto& list = sections_[static_cast<int>(kind)];
  if (std::ranges::find(list, section.name, &Section::name) != list.end()) {
    return InvalidArgument(fmt::format("{} '{}' registered twice", what, section.name));
  }
  list.push_back(std::move(section));
  return Status::Ok();
}

std::string ConfigSchema::KnownApps() const {
  if (apps().empty()) return "(none registered)";
  std::vector<std::string> names;
  for (const Section& a : apps()) names.push_back(a.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

const Section* ConfigSchema::FindApp(std::string_view name) const {
  const auto it = std::ranges::find(apps(), name, &Section::name);
  return it == apps().end() ? nullptr : &*it;
}

ConfigReader::ConfigReader(const ConfigSchema& schema)
    : schema_(schema), pool_(pb::DescriptorPool::generated_pool()) {
  factory_.SetDelegateToGeneratedFactory(true);
}

Result<std::unique_ptr<ConfigReader>> ConfigReader::Make(const ConfigSchema& schema) {
  std::unique_ptr<ConfigReader> reader(new ConfigReader(schema));
  const pb::Descriptor* config = proto::Config::descriptor();

  pb::FileDescriptorProto file;
  file.set_name("stalelearn/dynamic_config.proto");
  file.set_package(kPackage);
  file.set_syntax("proto3");
  std::set<std::string> dependencies{config->file()->name()};
  std::map<std::string, std::string> exact;  // a container's type -> its copy with sections
  for (SectionKind kind : kKinds) {
    for (const Section& s : schema.sections(kind)) dependencies.insert(s.prototype->GetDescriptor()->file()->name());
    exact["." + Info(kind).container->full_name()] = DynamicName(kind);
  }
  for (const std::string& d : dependencies) file.add_dependency(d);

  for (SectionKind kind : kKinds) {
    const KindInfo info = Info(kind);
    pb::DescriptorProto* copy = file.add_message_type();
    info.container->CopyTo(copy);
    copy->set_name(info.dynamic_name);
    // The resolved outputs (params; a backend's wrapped sections) are not
    // written in the text.
    auto* fields = copy->mutable_field();
    fields->erase(std::remove_if(fields->begin(), fields->end(),
                                 [&](const pb::FieldDescriptorProto& f) {
                                   return f.number() == kParamsNumber ||
                                          (kind == SectionKind::kBackend && f.number() == kWrappedNumber);
                                 }),
                  fields->end());
    if (kind == SectionKind::kBackend) {
      auto* nested = copy->mutable_nested_type();
      nested->erase(std::remove_if(nested->begin(), nested->end(),
                                   [](const pb::DescriptorProto& d) { return d.name() == "WrappedEntry"; }),
                    nested->end());
    }
    Retarget(*copy, {}, "." + info.container->full_name() + ".", DynamicName(kind) + ".");
    const std::vector<Section>& sections = schema.sections(kind);
    for (std::size_t i = 0; i < sections.size(); ++i) {
      AddMessageField(*copy, sections[i].name, kFirstSectionNumber + static_cast<int>(i),
                      sections[i].prototype->GetDescriptor()->full_name());
    }
  }
  pb::DescriptorProto* copy = file.add_message_type();
  config->CopyTo(copy);
  Retarget(*copy, exact, "." + config->full_name() + ".", fmt::format(".{}.Config.", kPackage));
  if (reader->pool_.BuildFile(file) == nullptr) {
    return Internal("cannot build the config schema (a section's name clashes with a framework field)");
  }
  reader->config_type_ = reader->pool_.FindMessageTypeByName(fmt::format("{}.Config", kPackage));
  if (reader->config_type_ == nullptr) return Internal("config schema incomplete");
  for (SectionKind kind : kKinds) {
    reader->section_types_[static_cast<int>(kind)] = reader->pool_.FindMessageTypeByName(DynamicName(kind).substr(1));
    if (reader->section_types_[static_cast<int>(kind)] == nullptr) return Internal("config schema incomplete");
  }
  return reader;
}

std::unique_ptr<pb::Message> ConfigReader::New() const {
  return std::unique_ptr<pb::Message>(factory_.GetPrototype(config_type_)->New());
}

Result<std::unique_ptr<pb::Message>> ConfigReader::Parse(std::string_view text, std::string_view source_name) const {
  std::unique_ptr<pb::Message> message = New();
  UserNamedErrorCollector errors(source_name, schema_.KnownApps());
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), message.get())) {
    return InvalidArgument(errors.first().empty() ? fmt::format("{}: not a valid Config", source_name)
                                                  : errors.first());
  }
  return message;
}

Status ConfigReader::ResolveSection(SectionKind kind, const pb::Message& dynamic, pb::Message& typed,
                                    const std::string& path, proto::Config& config) const {
  const KindInfo info = Info(kind);
  const std::vector<Section>& sections = schema_.sections(kind);
  const pb::Reflection& dr = *dynamic.GetReflection();
  const auto section_field = [&](std::size_t i) {
    return dynamic.GetDescriptor()->FindFieldByNumber(kFirstSectionNumber + static_cast<int>(i));
  };
  std::vector<std::size_t> set_sections;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (dr.HasField(dynamic, section_field(i))) set_sections.push_back(i);
  }
  const pb::Reflection& tr = *typed.GetReflection();
  const pb::FieldDescriptor* name_field = typed.GetDescriptor()->FindFieldByName(info.name_field);
  std::string name = tr.GetString(typed, name_field);
  if (name.empty()) {
    if (set_sections.size() == 1) {
      name = sections[set_sections[0]].name;
    } else if (kind == SectionKind::kApp && sections.size() == 1) {
      name = sections[0].name;
    } else if (kind == SectionKind::kApp || set_sections.size() > 1) {
      return InvalidArgument(fmt::format("{}.{} is required ({}s: {})", path, info.name_field, info.path,
                                         kind == SectionKind::kApp ? schema_.KnownApps() : "more than one section set"));
    } else {
      return Status::Ok();  // the default (backend chosen by the program, merge policy sum)
    }
  }
  const auto chosen = std::ranges::find(sections, name, &Section::name);
  if (chosen == sections.end() && kind == SectionKind::kApp) {
    return InvalidArgument(fmt::format("app.name: unknown app '{}' (apps: {})", name, schema_.KnownApps()));
  }
  if (const std::vector<std::string>& known = schema_.names(kind);
      !known.empty() && std::ranges::find(known, name) == known.end()) {
    if (kind == SectionKind::kBackend) {
      return InvalidArgument(fmt::format("backend.name: unknown backend '{}' (backends: {})", name, fmt::join(known, ", ")));
    }
    return InvalidArgument(fmt::format("{}: unknown merge policy '{}' (known: {})", path, name, fmt::join(known, ", ")));
  }
  const auto index = static_cast<std::size_t>(chosen - sections.begin());
  // Section i as set (or empty), resolved, into `any`.
  const auto resolve_into = [&](std::size_t i, pb::Any& any) -> Status {
    std::unique_ptr<pb::Message> params(sections[i].prototype->New());
    if (dr.HasField(dynamic, section_field(i)) &&
        !params->ParseFromString(dr.GetMessage(dynamic, section_field(i)).SerializeAsString())) {
      return Internal(fmt::format("{}.{} does not convert", path, sections[i].name));
    }
    STALELEARN_RETURN_IF_ERROR(ResolveFieldRules(*params, fmt::format("{}.{}", path, sections[i].name)));
    if (sections[i].resolve) STALELEARN_RETURN_IF_ERROR(sections[i].resolve(*params, config));
    any.PackFrom(*params);
    return Status::Ok();
  };
  const bool wraps = kind == SectionKind::kBackend && chosen != sections.end() && chosen->wraps;
  for (std::size_t i : set_sections) {
    if (i == index) continue;
    if (!wraps) {
      return InvalidArgument(
          fmt::format("{}.{} is set but {}.{} is '{}'", path, sections[i].name, path, info.name_field, name));
    }
    auto& wrapped = *static_cast<proto::BackendConfig&>(typed).mutable_wrapped();
    STALELEARN_RETURN_IF_ERROR(resolve_into(i, wrapped[sections[i].name]));
  }
  tr.SetString(&typed, name_field, name);
  // A backend or policy without an options message: its registry checks the name.
  if (chosen == sections.end()) return Status::Ok();
  return resolve_into(index, *static_cast<pb::Any*>(
                                 tr.MutableMessage(&typed, typed.GetDescriptor()->FindFieldByNumber(kParamsNumber))));
}

Result<proto::Config> ConfigReader::ToConfig(const pb::Message& full) const {
  if (full.GetDescriptor() != config_type_) return Internal("ToConfig: not a message of this reader");
  if (std::string field = FindInvalidUtf8(full, ""); !field.empty()) {
    return InvalidArgument(fmt::format("{}: not valid UTF-8 text", field));
  }
  proto::Config config;
  if (!config.ParseFromString(full.SerializeAsString())) return Internal("config does not convert");
  // The sections arrive as unknown fields of their containers; only the
  // chosen one of each is kept, resolved, in its params.
  const auto clear_unknown = [](pb::Message& m) { m.GetReflection()->MutableUnknownFields(&m)->Clear(); };
  clear_unknown(*config.mutable_app());
  clear_unknown(*config.mutable_backend());
  for (auto& [key, value] : *config.mutable_merge()) clear_unknown(value);

  const pb::Reflection& r = *full.GetReflection();
  const auto sub = [&](int number) -> const pb::Message& {
    return r.GetMessage(full, config_type_->FindFieldByNumber(number));
  };
  STALELEARN_RETURN_IF_ERROR(
      ResolveSection(SectionKind::kApp, sub(proto::Config::kAppFieldNumber), *config.mutable_app(), "app", config));
  STALELEARN_RETURN_IF_ERROR(ResolveSection(SectionKind::kBackend, sub(proto::Config::kBackendFieldNumber),
                                            *config.mutable_backend(), "backend", config));
  const pb::FieldDescriptor* merge = config_type_->FindFieldByNumber(proto::Config::kMergeFieldNumber);
  for (int i = 0; i < r.FieldSize(full, merge); ++i) {
    const pb::Message& entry = r.GetRepeatedMessage(full, merge, i);
    const pb::Descriptor* entry_type = merge->message_type();
    const std::string key = entry.GetReflection()->GetString(entry, entry_type->map_key());
    const pb::Message& value = entry.GetReflection()->GetMessage(entry, entry_type->map_value());
    STALELEARN_RETURN_IF_ERROR(ResolveSection(SectionKind::kMergePolicy, value, (*config.mutable_merge())[key],
                                              fmt::format("merge.{}", key), config));
  }
  return config;
}

}  // namespace stalelearn::config
