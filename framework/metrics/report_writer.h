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
// Whether a file can be written at `path` without writing it: creates and
// removes a probe file beside it (a file already at `path` is left as it
// is). Checked before a run trains, so a report that cannot be written fails
// in a second instead of after the run. `what` names the path in the error
// ("--report", "output.trace").
Status CheckWritable(const std::string& path, const std::string& what);
// When WriteReportFile fails at the end of a run: writes the report to a new
// file in $TMPDIR (or /tmp) and returns its path, so the result survives.
Result<std::string> WriteReportToTemporaryFile(const proto::Report& report);
// Parses a report written by WriteReportFile (tests, sweep tools).
Result<proto::Report> ReportFromJson(const std::string& json);
// Reads and parses the report file at `path` (sweep, plot). kInvalidArgument,
// one line naming `path`: "cannot read the report" or "not a stalelearn
// report (<the parser's first line>)".
Result<proto::Report> ReadReportFile(const std::string& path);

}  // namespace stalelearn::metrics
