#include "backends/timing/presets.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace stalelearn::backends::timing {
namespace {

namespace pb = google::protobuf;

// Keeps the first text-format error with its 1-based position.
class FirstParseError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (message_.empty()) message_ = fmt::format("{}:{}: {}", line + 1, column + 1, message);
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

bool IsValidName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
}

std::string JoinPath(const std::string& prefix, const std::string& field) {
  return prefix.empty() ? field : prefix + "." + field;
}

Status CheckQuantity(const proto::Quantity& q, const pb::FieldDescriptor& field, const std::string& path,
                     const std::string& file) {
  auto bad = [&](std::string_view what) {
    return InvalidArgument(fmt::format("{}: field {}: {}", file, path, what));
  };
  const double v = q.value();
  if (!std::isfinite(v)) return bad(fmt::format("value must be finite, got {}", v));
  const bool zero_allowed = field.options().GetExtension(proto::zero_allowed);
  if (zero_allowed ? v < 0 : v <= 0) {
    return bad(fmt::format("value must be {} 0, got {}", zero_allowed ? ">=" : ">", v));
  }
  if (field.options().GetExtension(proto::whole_number) && v != std::floor(v)) {
    return bad(fmt::format("value must be a whole number, got {}", v));
  }
  if (q.tag() == proto::TAG_UNSPECIFIED) return bad("tag missing (STATED, DERIVED, ESTIMATE or MEASURED)");
  if (q.source().empty()) return bad("source missing: every number names where it comes from");
  return Status::Ok();
}

Status ValidateMessage(const pb::Message& message, const std::string& prefix, const std::string& file) {
  const pb::Descriptor& type = *message.GetDescriptor();
  const pb::Reflection& reflection = *message.GetReflection();
  for (int i = 0; i < type.oneof_decl_count(); ++i) {
    const pb::OneofDescriptor& oneof = *type.oneof_decl(i);
    if (reflection.HasOneof(message, &oneof)) continue;
    std::vector<std::string> choices;
    for (int j = 0; j < oneof.field_count(); ++j) choices.push_back(oneof.field(j)->name());
    return InvalidArgument(fmt::format("{}: field {}: missing; set one of {}", file,
                                       JoinPath(prefix, oneof.name()), fmt::join(choices, ", ")));
  }
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor& field = *type.field(i);
    if (field.cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE || field.is_repeated()) continue;
    // An unselected alternative of a oneof is not part of this preset.
    if (field.containing_oneof() != nullptr && !reflection.HasField(message, &field)) continue;
    const std::string path = JoinPath(prefix, field.name());
    if (!reflection.HasField(message, &field)) {
      if (field.options().GetExtension(proto::optional_section)) continue;
      return InvalidArgument(fmt::format("{}: field {}: missing", file, path));
    }
    const pb::Message& child = reflection.GetMessage(message, &field);
    if (field.message_type() == proto::Quantity::descriptor()) {
      STALELEARN_RETURN_IF_ERROR(
          CheckQuantity(static_cast<const proto::Quantity&>(child), field, path, file));
    } else {
      STALELEARN_RETURN_IF_ERROR(ValidateMessage(child, path, file));
    }
  }
  return Status::Ok();
}

template <class Preset>
Result<Preset> Load(const std::filesystem::path& dir, PresetKind kind, std::string_view name) {
  STALELEARN_ASSIGN_OR_RETURN(std::filesystem::path path, PresetPath(dir, kind, name));
  std::ifstream in(path);
  if (!in) {
    return NotFound(fmt::format("unknown {} preset '{}': no file {} (known: {})", PresetSubdirectory(kind),
                                name, path.string(), fmt::join(ListPresets(dir, kind), ", ")));
  }
  std::ostringstream text;
  text << in.rdbuf();
  Preset preset;
  STALELEARN_RETURN_IF_ERROR(ParsePreset(text.str(), path.string(), name, preset));
  return preset;
}

}  // namespace

std::string_view PresetSubdirectory(PresetKind kind) {
  switch (kind) {
    case PresetKind::kMemory: return "memory";
    case PresetKind::kLink: return "link";
    case PresetKind::kCompute: return "compute";
  }
  return "?";
}

Result<std::filesystem::path> PresetPath(const std::filesystem::path& dir, PresetKind kind,
                                         std::string_view name) {
  if (!IsValidName(name)) {
    return InvalidArgument(fmt::format("bad {} preset name '{}': use letters, digits, '-' and '_'",
                                       PresetSubdirectory(kind), name));
  }
  return dir / PresetSubdirectory(kind) / (std::string(name) + ".pbtxt");
}

std::vector<std::string> ListPresets(const std::filesystem::path& dir, PresetKind kind) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir / PresetSubdirectory(kind), error)) {
    if (entry.path().extension() == ".pbtxt") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Status ParsePreset(std::string_view text, const std::string& file, std::string_view expected_name,
                   pb::Message& out) {
  pb::TextFormat::Parser parser;
  FirstParseError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &out)) {
    return InvalidArgument(fmt::format("{}:{}", file, errors.message()));
  }
  const pb::FieldDescriptor* name_field = out.GetDescriptor()->FindFieldByName("name");
  if (name_field != nullptr && !expected_name.empty()) {
    const std::string name = out.GetReflection()->GetString(out, name_field);
    if (name != expected_name) {
      return InvalidArgument(
          fmt::format("{}: field name: '{}' must equal the file name '{}'", file, name, expected_name));
    }
  }
  return ValidatePreset(out, file);
}

Status ValidatePreset(const pb::Message& preset, const std::string& file) {
  return ValidateMessage(preset, "", file);
}

Result<proto::MemoryPreset> LoadMemoryPreset(const std::filesystem::path& dir, std::string_view name) {
  return Load<proto::MemoryPreset>(dir, PresetKind::kMemory, name);
}
Result<proto::LinkPreset> LoadLinkPreset(const std::filesystem::path& dir, std::string_view name) {
  return Load<proto::LinkPreset>(dir, PresetKind::kLink, name);
}
Result<proto::ComputePreset> LoadComputePreset(const std::filesystem::path& dir, std::string_view name) {
  return Load<proto::ComputePreset>(dir, PresetKind::kCompute, name);
}

}  // namespace stalelearn::backends::timing
