// `stalelearn plot REPORT.json... [--out FILE.svg]`: the learning curve of one
// run, or of several overlaid for comparison, as an SVG drawn by gnuplot (the
// sweeps' plotting path; Debian gnuplot-nox): the metric against epoch,
// against wall seconds and, when every report is simulated, against
// simulated seconds; one line per report, each evaluation a point. Default
// --out: the first report's path with .svg. A file that is not a report,
// or a report without a curve, is one line and exit 2.
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/cli/commands.h"
#include "apps/cli/sweep/plots.h"
#include "apps/cli/sweep/process.h"
#include "framework/core/error.h"
#include "framework/metrics/report_writer.h"

namespace stalelearn::cli {
namespace {

namespace fs = std::filesystem;

struct PlotOptions {
  std::vector<std::string> reports;
  std::string out;
};

proto::Report ReadPlottableReport(const std::string& path) {
  proto::Report report = ValueOrThrow(metrics::ReadReportFile(path));
  if (report.curve_size() == 0) {
    throw Error(InvalidArgument(fmt::format("{}: the report has no curve points to plot", path)));
  }
  return report;
}

// A report's line title: its run name, else its file name; with its stop.
std::string Title(const proto::Report& report, const std::string& path) {
  std::string title = report.name().empty() ? fs::path(path).filename().string() : report.name();
  if (report.has_stopped()) title += fmt::format(" (stopped at clock {})", report.stopped().clock());
  return title;
}

// The temporary directory of data files and the script; removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "stalelearn-plot.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw Error(Internal("plot: cannot create a temporary directory"));
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void RunPlot(const PlotOptions& options) {
  std::vector<proto::Report> reports;
  for (const std::string& path : options.reports) reports.push_back(ReadPlottableReport(path));
  const fs::path out = fs::absolute(options.out.empty() ? fs::path(options.reports.front()).replace_extension(".svg")
                                                        : fs::path(options.out));
  const bool simulated = std::all_of(reports.begin(), reports.end(), [](const proto::Report& r) {
    return std::all_of(r.curve().begin(), r.curve().end(),
                       [](const proto::CurvePoint& p) { return p.simulated_seconds() > 0; });
  });
  const std::string metric = reports.front().final().metric();
  ScratchDir scratch;
  std::vector<std::string> epoch_lines, wall_lines, simulated_lines;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const std::string data = fmt::format("run{}.dat", i);
    std::ofstream file(scratch.path() / data);
    file << "# epoch wall_seconds simulated_seconds metric\n";
    for (const proto::CurvePoint& p : reports[i].curve()) {
      file << fmt::format("{} {:.9g} {:.9g} {:.9g}\n", p.epoch(), p.wall_seconds(), p.simulated_seconds(),
                          p.metric_value());
    }
    if (!file) throw Error(Internal(fmt::format("plot: cannot write {}", (scratch.path() / data).string())));
    const std::string title = sweep::GnuplotQuote(Title(reports[i], options.reports[i]));
    const auto line = [&](int x) {
      return fmt::format("{} using {}:4 with linespoints pt 7 ps 0.6 lc {} title {}", sweep::GnuplotQuote(data), x, i + 1,
                         title);
    };
    epoch_lines.push_back(line(1));
    wall_lines.push_back(line(2));
    simulated_lines.push_back(line(3));
  }
  const int panels = simulated ? 3 : 2;
  std::string script = fmt::format(
      "set terminal svg size {},450 dynamic noenhanced\nset output {}\nset termoption noenhanced\nset grid\n"
      "set key top right\nset multiplot layout 1,{} title {}\nset ylabel {}\n",
      480 * panels, sweep::GnuplotQuote(out.string()), panels,
      sweep::GnuplotQuote(fmt::format("{} {}: {}", reports.front().app(), reports.front().dataset(), metric)),
      sweep::GnuplotQuote(metric));
  script += fmt::format("set xlabel 'epoch'\nplot {}\n", fmt::join(epoch_lines, ", "));
  script += fmt::format("set xlabel 'wall seconds'\nplot {}\n", fmt::join(wall_lines, ", "));
  if (simulated) script += fmt::format("set xlabel 'simulated seconds'\nplot {}\n", fmt::join(simulated_lines, ", "));
  script += "unset multiplot\nunset output\n";
  {
    std::ofstream file(scratch.path() / "plot.gp");
    file << script;
  }
  const fs::path log = scratch.path() / "gnuplot.log";
  Result<int> code = sweep::RunProcess(
      {"gnuplot", "-e", "cd " + sweep::GnuplotQuote(scratch.path().string()), (scratch.path() / "plot.gp").string()}, log);
  if (!code.ok()) {
    throw Error(FailedPrecondition("plot: gnuplot not found (Debian package gnuplot-nox; ./deploy/install-deps.sh "
                                   "installs it)"));
  }
  if (*code != 0) throw Error(Internal(fmt::format("plot: gnuplot failed: {}", sweep::LastLine(log))));
  std::fprintf(stderr, "[stalelearn] plot: %s\n", out.c_str());
}

}  // namespace

void AddPlotCommand(CLI::App& app) {
  auto options = std::make_shared<PlotOptions>();
  CLI::App* plot = app.add_subcommand(
      "plot", "Draw the learning curve of one or more reports (overlaid) as an SVG, with gnuplot");
  plot->add_option("reports", options->reports, "Report JSON files (stalelearn train --report)")
      ->required()
      ->check(CLI::ExistingFile);
  plot->add_option("--out", options->out, "SVG to write (default: the first report with .svg)");
  plot->callback([options] { RunPlot(*options); });
}

}  // namespace stalelearn::cli
