#include "framework/core/config_schema.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <set>

namespace stalelearn::config {
namespace {

namespace pb = google::protobuf;

constexpr const char* kPackage = "stalelearn.dynamic";
constexpr int kFirstSectionNumber = 100;

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
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  FirstErrorCollector(std::string_view source, std::string known_apps)
      : source_(source), known_apps_(std::move(known_apps)) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!first_.empty()) return;
    std::string text = message;
    Replace(text, fmt::format("\"{}.AppSection\"", kPackage), fmt::format("app (apps: {})", known_apps_));
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

// Rewrites references to Config's nested types (map entries) into the copy's.
void RetargetNested(pb::DescriptorProto& message, const std::string& from, const std::string& to) {
  for (pb::FieldDescriptorProto& field : *message.mutable_field()) {
    if (field.type_name().rfind(from, 0) == 0) field.set_type_name(to + field.type_name().substr(from.size()));
  }
  for (pb::DescriptorProto& nested : *message.mutable_nested_type()) RetargetNested(nested, from, to);
}

}  // namespace

Status ConfigSchema::AddApp(AppSection section) {
  if (!IsIdentifier(section.name)) {
    return InvalidArgument(fmt::format("app name '{}' must be an identifier ([A-Za-z_][A-Za-z0-9_]*)", section.name));
  }
  if (section.prototype == nullptr) return InvalidArgument(fmt::format("app '{}' has no config message", section.name));
  if (FindApp(section.name) != nullptr) return InvalidArgument(fmt::format("app '{}' registered twice", section.name));
  apps_.push_back(std::move(section));
  return Status::Ok();
}

std::string ConfigSchema::KnownApps() const {
  if (apps_.empty()) return "(none registered)";
  std::vector<std::string> names;
  for (const AppSection& a : apps_) names.push_back(a.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

const AppSection* ConfigSchema::FindApp(std::string_view name) const {
  for (const AppSection& a : apps_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

ConfigReader::ConfigReader(const ConfigSchema& schema)
    : apps_(schema.apps()), known_apps_(schema.KnownApps()), pool_(pb::DescriptorPool::generated_pool()) {
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
  for (const AppSection& a : reader->apps_) dependencies.insert(a.prototype->GetDescriptor()->file()->name());
  for (const std::string& d : dependencies) file.add_dependency(d);

  pb::DescriptorProto* section = file.add_message_type();
  section->set_name("AppSection");
  pb::FieldDescriptorProto* name = section->add_field();
  name->set_name("name");
  name->set_number(proto::AppConfig::kNameFieldNumber);
  name->set_type(pb::FieldDescriptorProto::TYPE_STRING);
  name->set_label(pb::FieldDescriptorProto::LABEL_OPTIONAL);
  for (std::size_t i = 0; i < reader->apps_.size(); ++i) {
    pb::FieldDescriptorProto* f = section->add_field();
    f->set_name(reader->apps_[i].name);
    f->set_number(kFirstSectionNumber + static_cast<int>(i));
    f->set_type(pb::FieldDescriptorProto::TYPE_MESSAGE);
    f->set_label(pb::FieldDescriptorProto::LABEL_OPTIONAL);
    f->set_type_name("." + reader->apps_[i].prototype->GetDescriptor()->full_name());
  }

  pb::DescriptorProto* copy = file.add_message_type();
  config->CopyTo(copy);
  RetargetNested(*copy, "." + config->full_name() + ".", fmt::format(".{}.Config.", kPackage));
  for (pb::FieldDescriptorProto& f : *copy->mutable_field()) {
    if (f.number() == proto::Config::kAppFieldNumber) f.set_type_name(fmt::format(".{}.AppSection", kPackage));
  }
  if (reader->pool_.BuildFile(file) == nullptr) {
    return Internal("cannot build the config schema (an app's config message clashes with the framework's)");
  }
  reader->config_type_ = reader->pool_.FindMessageTypeByName(fmt::format("{}.Config", kPackage));
  reader->app_type_ = reader->pool_.FindMessageTypeByName(fmt::format("{}.AppSection", kPackage));
  if (reader->config_type_ == nullptr || reader->app_type_ == nullptr) return Internal("config schema incomplete");
  return reader;
}

std::unique_ptr<pb::Message> ConfigReader::New() const {
  return std::unique_ptr<pb::Message>(factory_.GetPrototype(config_type_)->New());
}

Result<std::unique_ptr<pb::Message>> ConfigReader::Parse(std::string_view text, std::string_view source_name) const {
  std::unique_ptr<pb::Message> message = New();
  FirstErrorCollector errors(source_name, known_apps_);
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), message.get())) {
    return InvalidArgument(errors.first().empty() ? fmt::format("{}: not a valid Config", source_name)
                                                  : errors.first());
  }
  return message;
}

Result<proto::Config> ConfigReader::ToConfig(const pb::Message& full) const {
  if (full.GetDescriptor() != config_type_) return Internal("ToConfig: not a message of this reader");
  if (std::string field = FindInvalidUtf8(full, ""); !field.empty()) {
    return InvalidArgument(fmt::format("{}: not valid UTF-8 text", field));
  }
  proto::Config config;
  if (!config.ParseFromString(full.SerializeAsString())) return Internal("config does not convert");
  // The app sections arrive as unknown fields of AppConfig; only the chosen
  // one is kept, resolved, in app.params.
  config.mutable_app()->GetReflection()->MutableUnknownFields(config.mutable_app())->Clear();

  const pb::Message& app = full.GetReflection()->GetMessage(full, config_type_->FindFieldByNumber(
                                                                      proto::Config::kAppFieldNumber));
  std::vector<std::size_t> set_sections;
  for (std::size_t i = 0; i < apps_.size(); ++i) {
    const pb::FieldDescriptor* f = app_type_->FindFieldByNumber(kFirstSectionNumber + static_cast<int>(i));
    if (app.GetReflection()->HasField(app, f)) set_sections.push_back(i);
  }
  std::string name = config.app().name();
  if (name.empty()) {
    if (set_sections.size() == 1) {
      name = apps_[set_sections[0]].name;
    } else if (apps_.size() == 1) {
      name = apps_[0].name;
    } else {
      return InvalidArgument(fmt::format("app.name is required (apps: {})", known_apps_));
    }
  }
  const auto chosen = std::ranges::find(apps_, name, &AppSection::name);
  if (chosen == apps_.end()) {
    return InvalidArgument(fmt::format("app.name: unknown app '{}' (apps: {})", name, known_apps_));
  }
  const auto index = static_cast<std::size_t>(chosen - apps_.begin());
  for (std::size_t i : set_sections) {
    if (i != index) {
      return InvalidArgument(fmt::format("app.{} is set but app.name is '{}'", apps_[i].name, name));
    }
  }
  std::unique_ptr<pb::Message> params(chosen->prototype->New());
  const pb::FieldDescriptor* field = app_type_->FindFieldByNumber(kFirstSectionNumber + static_cast<int>(index));
  if (app.GetReflection()->HasField(app, field)) {
    if (!params->ParseFromString(app.GetReflection()->GetMessage(app, field).SerializeAsString())) {
      return Internal(fmt::format("app.{} does not convert", name));
    }
  }
  config.mutable_app()->set_name(name);
  if (chosen->resolve) STALELEARN_RETURN_IF_ERROR(chosen->resolve(*params, config));
  config.mutable_app()->mutable_params()->PackFrom(*params);
  return config;
}

}  // namespace stalelearn::config
