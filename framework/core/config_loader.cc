#include "framework/core/config_loader.h"

#include <fmt/format.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include "framework/core/field_rules.h"

#include <cerrno>
#include <cstring>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <algorithm>
#include <cctype>

#include <unistd.h>

namespace stalelearn::config {
namespace {

namespace pb = google::protobuf;

// Keeps the first error protobuf reports, as "source:line:column: message".
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(std::string_view source) : source_(source) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (first_.empty()) first_ = fmt::format("{}:{}:{}: {}", source_, line + 1, column + 1, message);
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string source_;
  std::string first_;
};

template <typename T>
Result<T> ParseNumber(std::string_view text, std::string_view field) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    return InvalidArgument(fmt::format("--set {}: '{}' is not a valid number", field, text));
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) return InvalidArgument(fmt::format("--set {}: '{}' is not finite", field, text));
  }
  return value;
}

Status SetScalar(pb::Message& msg, const pb::FieldDescriptor& field, std::string_view value,
                 std::string_view path) {
  const pb::Reflection& r = *msg.GetReflection();
  switch (field.cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: {
      STALELEARN_ASSIGN_OR_RETURN(auto v, ParseNumber<std::int32_t>(value, path));
      r.SetInt32(&msg, &field, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_INT64: {
      STALELEARN_ASSIGN_OR_RETURN(auto v, ParseNumber<std::int64_t>(value, path));
      r.SetInt64(&msg, &field, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT32: {
      STALELEARN_ASSIGN_OR_RETURN(auto v, ParseNumber<std::uint32_t>(value, path));
      r.SetUInt32(&msg, &field, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_UINT64: {
      STALELEARN_ASSIGN_OR_RETURN(auto v, ParseNumber<std::uint64_t>(value, path));
      r.SetUInt64(&msg, &field, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_FLOAT: {
      STALELEARN_ASSIGN_OR_RETURN(auto v, ParseNumber<float>(value, path));
      r.SetFloat(&msg, &field, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
      STALELEARN_ASSIGN_OR_RETURN(auto v, ParseNumber<double>(value, path));
      r.SetDouble(&msg, &field, v);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_BOOL: {
      if (value == "true" || value == "1") {
        r.SetBool(&msg, &field, true);
      } else if (value == "false" || value == "0") {
        r.SetBool(&msg, &field, false);
      } else {
        return InvalidArgument(fmt::format("--set {}: '{}' is not a bool (true/false)", path, value));
      }
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const pb::EnumValueDescriptor* e = field.enum_type()->FindValueByName(std::string(value));
      if (e == nullptr) {
        std::vector<std::string> names;
        for (int i = 0; i < field.enum_type()->value_count(); ++i) {
          if (field.enum_type()->value(i)->number() != 0) names.push_back(field.enum_type()->value(i)->name());
        }
        return InvalidArgument(
            fmt::format("--set {}: unknown value '{}' (one of: {})", path, value, fmt::join(names, ", ")));
      }
      r.SetEnum(&msg, &field, e);
      break;
    }
    case pb::FieldDescriptor::CPPTYPE_STRING:
      r.SetString(&msg, &field, std::string(value));
      break;
    case pb::FieldDescriptor::CPPTYPE_MESSAGE:
      return InvalidArgument(fmt::format("--set {}: is a message; set one of its fields", path));
  }
  return Status::Ok();
}

// The entry of map field `field` of `msg` whose key is `key`, added if missing.
pb::Message& MapEntry(pb::Message& msg, const pb::FieldDescriptor& field, std::string_view key) {
  const pb::Reflection& r = *msg.GetReflection();
  const pb::Descriptor* entry_type = field.message_type();
  for (int i = 0; i < r.FieldSize(msg, &field); ++i) {
    pb::Message* entry = r.MutableRepeatedMessage(&msg, &field, i);
    if (entry->GetReflection()->GetString(*entry, entry_type->map_key()) == key) return *entry;
  }
  pb::Message* entry = r.AddMessage(&msg, &field);
  entry->GetReflection()->SetString(entry, entry_type->map_key(), std::string(key));
  return *entry;
}

Status ValidateEarlyStoppingFields(const proto::EarlyStoppingConfig& config) {
  if (!config.direction().empty() && config.direction() != "min" && config.direction() != "max") {
    return InvalidArgument(fmt::format("training.early_stopping.direction must be \"min\" or \"max\", got \"{}\"",
                                       config.direction()));
  }
  return Status::Ok();
}

}  // namespace

Result<proto::Config> ParseConfigText(std::string_view text, std::string_view source_name) {
  proto::Config config;
  FirstErrorCollector errors(source_name);
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &config)) {
    return InvalidArgument(errors.first().empty() ? fmt::format("{}: not a valid Config", source_name)
                                                  : errors.first());
  }
  return config;
}

Status ApplyOverride(pb::Message& config, std::string_view assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    return InvalidArgument(fmt::format("--set '{}': expected field.path=value", assignment));
  }
  std::string_view path = assignment.substr(0, eq);
  std::string_view value = assignment.substr(eq + 1);

  pb::Message* msg = &config;
  std::string_view rest = path;
  while (true) {
    auto dot = rest.find('.');
    std::string_view name = rest.substr(0, dot);
    const pb::FieldDescriptor* field = msg->GetDescriptor()->FindFieldByName(std::string(name));
    if (field == nullptr) {
      return InvalidArgument(
          fmt::format("--set {}: unknown field '{}' in {}", path, name, msg->GetDescriptor()->name()));
    }
    if (field->is_map()) {
      if (dot == std::string_view::npos) {
        return InvalidArgument(fmt::format("--set {}: a map; use {}.KEY=value", path, name));
      }
      if (field->message_type()->map_key()->cpp_type() != pb::FieldDescriptor::CPPTYPE_STRING) {
        return InvalidArgument(fmt::format("--set {}: only maps with string keys can be overridden", path));
      }
      const pb::FieldDescriptor* value_field = field->message_type()->map_value();
      rest = rest.substr(dot + 1);
      if (value_field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        // map<string, scalar>: the rest of the path is the key (it may hold dots).
        pb::Message& entry = MapEntry(*msg, *field, rest);
        return SetScalar(entry, *value_field, value, path);
      }
      // map<string, Message>: KEY.field.path
      const auto key_end = rest.find('.');
      if (key_end == std::string_view::npos) {
        return InvalidArgument(fmt::format("--set {}: a map of messages; use {}.KEY.FIELD=value", path, name));
      }
      pb::Message& entry = MapEntry(*msg, *field, rest.substr(0, key_end));
      msg = entry.GetReflection()->MutableMessage(&entry, value_field);
      rest = rest.substr(key_end + 1);
      continue;
    }
    if (field->is_repeated()) {
      return InvalidArgument(fmt::format("--set {}: repeated fields cannot be overridden", path));
    }
    if (dot == std::string_view::npos) return SetScalar(*msg, *field, value, path);
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      return InvalidArgument(fmt::format("--set {}: '{}' is not a message", path, name));
    }
    msg = msg->GetReflection()->MutableMessage(msg, field);
    rest = rest.substr(dot + 1);
  }
}

Status ResolveDefaults(proto::Config& c) {
  // The constant defaults are declared in config.proto ((stalelearn.rules));
  // the ones that depend on other fields or on the machine are filled here.
  STALELEARN_RETURN_IF_ERROR(FillDeclaredDefaults(c));
  if (c.data().split_seed() == 0) c.mutable_data()->set_split_seed(c.seed());
  auto* t = c.mutable_training();
  // samples_per_clock 0 stays: its share of global_samples_per_clock is
  // derived once the number of compute ranks is known (runtime/train.cc).
  if (t->scratchpad_bytes() == 0) {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    t->set_scratchpad_bytes(l2 > 0 ? l2 : std::int64_t{1} << 20);
  }
  auto* cons = c.mutable_consistency();
  // Mode names are case-insensitive; the registry holds them upper-case.
  std::string mode = cons->mode().empty() ? "SSP" : cons->mode();
  std::ranges::transform(mode, mode.begin(), [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
  cons->set_mode(mode);
  if (c.wait().warn_after_seconds() == 0) c.mutable_wait()->set_warn_after_seconds(30);
  if (c.output().progress_seconds() == 0) c.mutable_output()->set_progress_seconds(10);
  auto* cp = t->mutable_checkpoint();
  if (cp->dir().empty() && cp->every_clocks() > 0) cp->set_dir(cp->resume_dir());
  return Validate(c);
}

Status Validate(const proto::Config& c) {
  // The declared ranges (config.proto), then what relates several fields or
  // needs a hint the rules cannot give.
  STALELEARN_RETURN_IF_ERROR(CheckDeclaredRules(c, ""));
  STALELEARN_RETURN_IF_ERROR(ValidateEarlyStoppingFields(c.training().early_stopping()));
  if (c.training().samples_per_clock() < 0) {
    return InvalidArgument(fmt::format("training.samples_per_clock must be >= 0 (0: derived from "
                                       "training.global_samples_per_clock), got {}",
                                       c.training().samples_per_clock()));
  }
  if (c.training().scratchpad_bytes() < 4096) {
    return InvalidArgument(fmt::format("training.scratchpad_bytes must be >= 4096 (0: the L2 size), got {}",
                                       c.training().scratchpad_bytes()));
  }
  const auto& straggler = c.training().straggler();
  if (straggler.slowdown() != 0 && !(straggler.slowdown() >= 1 && std::isfinite(straggler.slowdown()))) {
    return InvalidArgument(
        fmt::format("training.straggler.slowdown must be >= 1 (or 0 for none), got {}", straggler.slowdown()));
  }
  if (straggler.rank() < 0) {
    return InvalidArgument(fmt::format("training.straggler.rank must be >= 0, got {}", straggler.rank()));
  }
  if (!(straggler.transient_probability() >= 0 && straggler.transient_probability() <= 1)) {
    return InvalidArgument(fmt::format("training.straggler.transient_probability must be in [0, 1], got {}",
                                       straggler.transient_probability()));
  }
  if (!(straggler.transient_delay() >= 0 && std::isfinite(straggler.transient_delay()))) {
    return InvalidArgument(fmt::format("training.straggler.transient_delay must be >= 0 (0: default 4), got {}",
                                       straggler.transient_delay()));
  }
  if (!(c.wait().timeout_seconds() >= 0 && std::isfinite(c.wait().timeout_seconds()))) {
    return InvalidArgument(fmt::format("wait.timeout_seconds must be >= 0 (0: the default), got {}",
                                       c.wait().timeout_seconds()));
  }
  if (!std::isfinite(c.output().progress_seconds())) {
    return InvalidArgument(fmt::format("output.progress_seconds must be finite (negative: no progress lines), got {}",
                                       c.output().progress_seconds()));
  }
  if (!std::isfinite(c.wait().warn_after_seconds())) {
    return InvalidArgument(fmt::format("wait.warn_after_seconds must be finite (negative: never), got {}",
                                       c.wait().warn_after_seconds()));
  }
  const auto& checkpoint = c.training().checkpoint();
  if (checkpoint.every_clocks() < 0) {
    return InvalidArgument(
        fmt::format("training.checkpoint.every_clocks must be >= 0 (0: none), got {}", checkpoint.every_clocks()));
  }
  if (checkpoint.every_clocks() > 0 && checkpoint.dir().empty()) {
    return InvalidArgument("training.checkpoint.every_clocks needs training.checkpoint.dir");
  }
  const double dead_after = c.faults().dead_after_seconds();
  if (!(dead_after >= 0 && std::isfinite(dead_after))) {
    return InvalidArgument(fmt::format("faults.dead_after_seconds must be >= 0 (0: off), got {}", dead_after));
  }
  if (dead_after > 0 && checkpoint.every_clocks() > 0) {
    return InvalidArgument("faults.dead_after_seconds and training.checkpoint.every_clocks cannot be combined yet");
  }
  if (c.debug().kill_at_clock() < 0 || c.debug().kill_rank() < 0) {
    return InvalidArgument(fmt::format("debug.kill_rank and debug.kill_at_clock must be >= 0, got {} and {}",
                                       c.debug().kill_rank(), c.debug().kill_at_clock()));
  }
  if (c.debug().stop_at_clock() < 0) {
    return InvalidArgument(fmt::format("debug.stop_at_clock must be >= 0, got {}", c.debug().stop_at_clock()));
  }
  if (c.debug().stop_rank() < 0) {
    return InvalidArgument(fmt::format("debug.stop_rank must be >= 0 (0: every compute rank), got {}",
                                       c.debug().stop_rank()));
  }
  return Status::Ok();
}

Result<proto::Config> LoadConfig(const std::string& path, std::span<const std::string> overrides,
                                 const ConfigSchema& schema) {
  // A directory opens and reads as empty, which would pass as an empty config.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument(fmt::format("{}: cannot open config: is a directory", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("{}: cannot open config: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<ConfigReader> reader, ConfigReader::Make(schema));
  STALELEARN_ASSIGN_OR_RETURN(std::unique_ptr<pb::Message> full, reader->Parse(text.str(), path));
  for (const std::string& assignment : overrides) {
    STALELEARN_RETURN_IF_ERROR(ApplyOverride(*full, assignment));
  }
  Result<proto::Config> config = reader->ToConfig(*full);
  if (!config.ok()) return config.status().WithContext(path);
  Status resolved = ResolveDefaults(*config);
  if (!resolved.ok()) return resolved.WithContext(path);
  return config;
}

}  // namespace stalelearn::config
