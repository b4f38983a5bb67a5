// The run report as JSON with snake_case field names (proto field names),
// every field printed even when zero, so scripts can rely on the keys.
// Stateless functions; thread-safe.
#pragma once

#include <string>

#include "framework/core/status.h"
#include "framework/proto/report.pb.h"

namespace stalelearn::metrics {

Result<std::string> ReportToJson(const proto::Report& report);
// Writes ReportToJson to `path` (replaced atomically: temp file + rename).
Status WriteReportFile(const proto::Report& report, const std::string& path);
// Parses a report written by WriteReportFile (tests, sweep tools).
Result<proto::Report> ReportFromJson(const std::string& json);

}  // namespace stalelearn::metrics
