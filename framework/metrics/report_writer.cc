#include "framework/metrics/report_writer.h"

#include <fmt/format.h>
#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace stalelearn::metrics {

Result<std::string> ReportToJson(const proto::Report& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(report, &json, options);
  if (!status.ok()) return Internal(fmt::format("report to JSON: {}", status.ToString()));
  return json;
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

Result<proto::Report> ReportFromJson(const std::string& json) {
  proto::Report report;
  const auto status = google::protobuf::util::JsonStringToMessage(json, &report);
  if (!status.ok()) return InvalidArgument(fmt::format("report JSON: {}", status.ToString()));
  return report;
}

}  // namespace stalelearn::metrics
