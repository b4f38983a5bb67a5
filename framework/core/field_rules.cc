#include "framework/core/field_rules.h"

#include <fmt/format.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/text_format.h>

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "framework/proto/options.pb.h"

namespace stalelearn::config {
namespace {

namespace pb = google::protobuf;

const FieldRules* RulesOf(const pb::FieldDescriptor& field) {
  if (!field.options().HasExtension(rules)) return nullptr;
  return &field.options().GetExtension(rules);
}

// Sections packed in Any and map values are resolved by their owners.
bool Walks(const pb::FieldDescriptor& field) {
  return field.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && !field.is_map() &&
         field.message_type()->full_name() != "google.protobuf.Any";
}

bool DeclaresDefaults(const pb::Descriptor& type, int depth = 0) {
  if (depth > 16) return false;  // no config nests this deep; guards a recursive type
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor& f = *type.field(i);
    if (const FieldRules* r = RulesOf(f); r != nullptr && !r->default_().empty()) return true;
    if (Walks(f) && !f.is_repeated() && DeclaresDefaults(*f.message_type(), depth + 1)) return true;
  }
  return false;
}

std::string Join(std::string_view path, std::string_view name) {
  return path.empty() ? std::string(name) : fmt::format("{}.{}", path, name);
}

Status SetDefault(pb::Message& message, const pb::FieldDescriptor& field, const std::string& text) {
  if (field.cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
    message.GetReflection()->SetString(&message, &field, text);
    return Status::Ok();
  }
  if (!pb::TextFormat::ParseFieldValueFromString(text, &field, &message)) {
    return Internal(fmt::format("{}: declared default '{}' does not parse", field.full_name(), text));
  }
  return Status::Ok();
}

// A range as written in the rule: one-sided ("> 0") or an interval ("(0, 1]").
struct Range {
  double low = -INFINITY, high = INFINITY;
  bool low_open = false, high_open = false;
  std::string text;  // "> 0" or "in (0, 1]"
};

bool ParseBound(std::string_view text, double& out) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

Result<Range> ParseRange(const pb::FieldDescriptor& field, const std::string& text) {
  Range range;
  const auto bad = [&] { return Internal(fmt::format("{}: declared range '{}' does not parse", field.full_name(), text)); };
  std::string_view t = text;
  if (t.starts_with(">=") || t.starts_with("<=")) {
    double bound = 0;
    if (!ParseBound(t.substr(2), bound)) return bad();
    (t[0] == '>' ? range.low : range.high) = bound;
  } else if (t.starts_with('>') || t.starts_with('<')) {
    double bound = 0;
    if (!ParseBound(t.substr(1), bound)) return bad();
    (t[0] == '>' ? range.low : range.high) = bound;
    (t[0] == '>' ? range.low_open : range.high_open) = true;
  } else {
    const auto comma = t.find(',');
    if (t.size() < 5 || comma == std::string_view::npos || (t.front() != '(' && t.front() != '[') ||
        (t.back() != ')' && t.back() != ']')) {
      return bad();
    }
    if (!ParseBound(t.substr(1, comma - 1), range.low) || !ParseBound(t.substr(comma + 1, t.size() - comma - 2), range.high)) {
      return bad();
    }
    range.low_open = t.front() == '(';
    range.high_open = t.back() == ')';
    range.text = "in " + text;
    return range;
  }
  range.text = text;
  return range;
}

// The field's value as a number and as text for the error; false for strings.
bool NumberOf(const pb::Message& m, const pb::FieldDescriptor& f, double& value, std::string& text) {
  const pb::Reflection& r = *m.GetReflection();
  const auto number = [&](auto v) {
    value = static_cast<double>(v);
    text = fmt::format("{}", v);
    return true;
  };
  switch (f.cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: return number(r.GetInt32(m, &f));
    case pb::FieldDescriptor::CPPTYPE_INT64: return number(r.GetInt64(m, &f));
    case pb::FieldDescriptor::CPPTYPE_UINT32: return number(r.GetUInt32(m, &f));
    case pb::FieldDescriptor::CPPTYPE_UINT64: return number(r.GetUInt64(m, &f));
    case pb::FieldDescriptor::CPPTYPE_FLOAT: return number(r.GetFloat(m, &f));
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: return number(r.GetDouble(m, &f));
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      value = r.GetEnumValue(m, &f);
      text = r.GetEnum(m, &f)->name();
      return true;
    default: return false;
  }
}

// "a" or "b"; "a", "b" or "c".
std::string Alternatives(const FieldRules& rules) {
  std::vector<std::string> quoted;
  for (const std::string& v : rules.one_of()) quoted.push_back(fmt::format("\"{}\"", v));
  if (quoted.size() == 1) return quoted[0];
  const std::string last = quoted.back();
  quoted.pop_back();
  return fmt::format("{} or {}", fmt::join(quoted, ", "), last);
}

Status CheckField(const pb::Message& m, const pb::FieldDescriptor& f, const FieldRules& rules, std::string_view path) {
  double value = 0;
  std::string text;
  const bool number = NumberOf(m, f, value, text);
  if (!rules.one_of().empty()) {
    const std::string got = number ? text : m.GetReflection()->GetString(m, &f);
    bool found = false;
    for (const std::string& v : rules.one_of()) found = found || v == got;
    if (!found) {
      return InvalidArgument(fmt::format("{} must be {}, got {}", Join(path, f.name()), Alternatives(rules),
                                         number ? got : fmt::format("\"{}\"", got)));
    }
  }
  if (rules.range().empty()) return Status::Ok();
  if (!number) return Internal(fmt::format("{}: a range on a field that is not a number", f.full_name()));
  STALELEARN_ASSIGN_OR_RETURN(const Range range, ParseRange(f, rules.range()));
  const bool above = range.low_open ? value > range.low : value >= range.low;
  const bool below = range.high_open ? value < range.high : value <= range.high;
  if (above && below && std::isfinite(value)) return Status::Ok();  // NaN fails both comparisons
  return InvalidArgument(fmt::format("{} must be {}, got {}", Join(path, f.name()), range.text, text));
}

}  // namespace

Status FillDeclaredDefaults(pb::Message& message) {
  const pb::Descriptor& type = *message.GetDescriptor();
  const pb::Reflection& r = *message.GetReflection();
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor& f = *type.field(i);
    if (Walks(f)) {
      if (f.is_repeated()) {
        for (int k = 0; k < r.FieldSize(message, &f); ++k) {
          STALELEARN_RETURN_IF_ERROR(FillDeclaredDefaults(*r.MutableRepeatedMessage(&message, &f, k)));
        }
      } else if (r.HasField(message, &f) || DeclaresDefaults(*f.message_type())) {
        STALELEARN_RETURN_IF_ERROR(FillDeclaredDefaults(*r.MutableMessage(&message, &f)));
      }
      continue;
    }
    const FieldRules* rules = RulesOf(f);
    if (rules == nullptr || rules->default_().empty() || f.is_repeated() || r.HasField(message, &f)) continue;
    STALELEARN_RETURN_IF_ERROR(SetDefault(message, f, rules->default_()));
  }
  return Status::Ok();
}

Status CheckDeclaredRules(const pb::Message& message, std::string_view path) {
  const pb::Descriptor& type = *message.GetDescriptor();
  const pb::Reflection& r = *message.GetReflection();
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor& f = *type.field(i);
    if (Walks(f)) {
      const std::string sub = Join(path, f.name());
      if (f.is_repeated()) {
        for (int k = 0; k < r.FieldSize(message, &f); ++k) {
          STALELEARN_RETURN_IF_ERROR(CheckDeclaredRules(r.GetRepeatedMessage(message, &f, k), sub));
        }
      } else {
        STALELEARN_RETURN_IF_ERROR(CheckDeclaredRules(r.GetMessage(message, &f), sub));
      }
      continue;
    }
    const FieldRules* rules = RulesOf(f);
    if (rules == nullptr || f.is_repeated()) continue;
    STALELEARN_RETURN_IF_ERROR(CheckField(message, f, *rules, path));
  }
  return Status::Ok();
}

Status ResolveFieldRules(pb::Message& message, std::string_view path) {
  STALELEARN_RETURN_IF_ERROR(FillDeclaredDefaults(message));
  return CheckDeclaredRules(message, path);
}

}  // namespace stalelearn::config
