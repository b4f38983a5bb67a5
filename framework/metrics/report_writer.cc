#include "framework/metrics/report_writer.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace stalelearn::metrics {
namespace {

namespace pb = google::protobuf;

// Collects the JSON names of every 64-bit integer field reachable from `type`.
void CollectInt64FieldNames(const pb::Descriptor& type, std::set<std::string>& names) {
  for (int i = 0; i < type.field_count(); ++i) {
    const pb::FieldDescriptor& field = *type.field(i);
    if (field.cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64 ||
        field.cpp_type() == pb::FieldDescriptor::CPPTYPE_UINT64) {
      names.insert(field.name());
    } else if (field.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && field.message_type() != &type) {
      CollectInt64FieldNames(*field.message_type(), names);
    }
  }
}

// The proto3 JSON mapping quotes 64-bit integers ("samples": "600040"); a
// report is read by people and by jq, which expect numbers. Unquotes the
// values of exactly the 64-bit integer fields (all counts stay below 2^53
// in practice; protobuf parses both forms back).
std::string UnquoteInt64Values(const std::string& json) {
  static const std::set<std::string> names = [] {
    std::set<std::string> n;
    CollectInt64FieldNames(*proto::Report::descriptor(), n);
    return n;
  }();
  std::string out;
  out.reserve(json.size());
  std::size_t pos = 0;
  while (pos < json.size()) {
    // A key is `"name": ` ; look at each key and the value that follows it.
    std::size_t key_start = json.find('"', pos);
    if (key_start == std::string::npos) break;
    std::size_t key_end = json.find('"', key_start + 1);
    if (key_end == std::string::npos) break;
    const std::string key = json.substr(key_start + 1, key_end - key_start - 1);
    std::size_t value = key_end + 1;
    const bool is_key = json.compare(value, 2, ": ") == 0;
    out.append(json, pos, value - pos);
    pos = value;
    if (!is_key || !names.contains(key) || json.compare(value + 2, 1, "\"") != 0) continue;
    std::size_t digits_end = json.find('"', value + 3);
    if (digits_end == std::string::npos) break;
    const std::string digits = json.substr(value + 3, digits_end - value - 3);
    if (digits.empty() || digits.find_first_not_of("-0123456789") != std::string::npos) continue;
    out += ": ";
    out += digits;
    pos = digits_end + 1;
  }
  out.append(json, pos, std::string::npos);
  return out;
}

}  // namespace

Result<std::string> ReportToJson(const proto::Report& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(report, &json, options);
  if (!status.ok()) return Internal(fmt::format("report to JSON: {}", status.ToString()));
  return UnquoteInt64Values(json);
}

Status WriteReportFile(const proto::Report& report, const std::string& path) {
  STALELEARN_ASSIGN_OR_RETURN(std::string json, ReportToJson(report));
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) return InvalidArgument(fmt::format("{}: cannot write report: {}", path, std::strerror(errno)));
    out << json << '\n';
    if (!out.flush()) return InvalidArgument(fmt::format("{}: cannot write report: {}", path, std::strerror(errno)));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) return InvalidArgument(fmt::format("{}: cannot write report: {}", path, ec.message()));
  return Status::Ok();
}

Status CheckWritable(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument(fmt::format("{} {}: is a directory, expected a file name", what, path));
  }
  // A name of its own per process: ranks on one host probe the same path at once.
  const std::string probe = fmt::format("{}.probe.{}", path, ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return InvalidArgument(fmt::format("{} {}: cannot write there: {}", what, path, std::strerror(errno)));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

Result<std::string> WriteReportToTemporaryFile(const proto::Report& report) {
  STALELEARN_ASSIGN_OR_RETURN(std::string json, ReportToJson(report));
  const char* tmpdir = std::getenv("TMPDIR");
  std::string name = fmt::format("{}/stalelearn-report-XXXXXX.json", tmpdir != nullptr && *tmpdir ? tmpdir : "/tmp");
  const int fd = ::mkstemps(name.data(), 5);
  if (fd < 0) return Internal(fmt::format("{}: cannot create a temporary report: {}", name, std::strerror(errno)));
  json += '\n';
  std::size_t done = 0;
  while (done < json.size()) {
    const ssize_t n = ::write(fd, json.data() + done, json.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = errno;
      ::close(fd);
      return Internal(fmt::format("{}: cannot write the temporary report: {}", name, std::strerror(error)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return Internal(fmt::format("{}: cannot write the temporary report: {}", name, std::strerror(errno)));
  return name;
}

Result<proto::Report> ReportFromJson(const std::string& json) {
  proto::Report report;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &report);
  if (!status.ok()) return InvalidArgument(fmt::format("report JSON: {}", status.ToString()));
  return report;
}

Result<proto::Report> ReadReportFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(fmt::format("{}: cannot read the report", path));
  std::stringstream text;
  text << in.rdbuf();
  Result<proto::Report> report = ReportFromJson(text.str());
  if (report.ok()) return report;
  // The parser's message quotes the text on further lines: its first line only.
  const std::string why = report.status().message();
  return InvalidArgument(fmt::format("{}: not a stalelearn report ({})", path, why.substr(0, why.find('\n'))));
}

}  // namespace stalelearn::metrics
