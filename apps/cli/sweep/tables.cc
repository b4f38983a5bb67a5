#include "apps/cli/sweep/tables.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>

namespace stalelearn::cli::sweep {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Column {
  const char* name;
  std::function<std::optional<double>(const RunOutcome&)> value;
  bool to_target = false;  // missing = never reached (infinitely late)
  bool wall = false;       // wall-clock: not deterministic
};

template <class T>
std::optional<double> AsDouble(const std::optional<T>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

// A count from the report; none for a run without one (timed out, diverged).
std::optional<double> IfReported(const RunOutcome& o, double v) {
  return o.status == RunStatus::kOk ? std::optional<double>(v) : std::nullopt;
}

const std::vector<Column>& Columns() {
  static const std::vector<Column> columns = {
      {"final", [](const RunOutcome& o) { return std::optional<double>(o.final_value); }},
      {"epochs_to_target", [](const RunOutcome& o) { return AsDouble(o.epochs_to_target); }, true},
      {"clocks_to_target", [](const RunOutcome& o) { return AsDouble(o.clocks_to_target); }, true},
      {"sim_seconds_to_target", [](const RunOutcome& o) { return o.sim_seconds_to_target; }, true},
      {"sim_seconds", [](const RunOutcome& o) { return o.sim_seconds; }},
      {"sim_compute_s", [](const RunOutcome& o) { return o.sim_compute; }},
      {"sim_transfer_s", [](const RunOutcome& o) { return o.sim_transfer; }},
      {"sim_merge_s", [](const RunOutcome& o) { return o.sim_merge; }},
      {"sim_wait_s", [](const RunOutcome& o) { return o.sim_wait; }},
      {"bytes_put", [](const RunOutcome& o) { return IfReported(o, static_cast<double>(o.bytes_put)); }},
      {"bytes_get", [](const RunOutcome& o) { return IfReported(o, static_cast<double>(o.bytes_get)); }},
      {"max_staleness", [](const RunOutcome& o) { return IfReported(o, o.max_staleness); }},
      {"wall_seconds_to_target", [](const RunOutcome& o) { return o.wall_seconds_to_target; }, true, true},
      {"wall_seconds", [](const RunOutcome& o) { return std::optional<double>(o.wall_seconds); }, false, true},
      {"stall_seconds", [](const RunOutcome& o) { return IfReported(o, o.stall_seconds); }, false, true},
  };
  return columns;
}

std::string Number(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return "";
  return fmt::format("{:.15g}", *v);
}

std::string CsvCell(std::string_view text) {
  if (text.find_first_of(",\"\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string Row(const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ',';
    line += CsvCell(cells[i]);
  }
  return line + "\n";
}

std::vector<std::string> FieldHeader(const Grid& grid) {
  std::vector<std::string> header;
  for (const GridAxis& axis : grid) header.push_back(axis.field);
  return header;
}

std::vector<const Column*> IncludedColumns(const std::vector<SweepRun>& runs) {
  const bool wall = IncludesWallColumns(runs);
  std::vector<const Column*> out;
  for (const Column& c : Columns()) {
    if (!c.wall || wall) out.push_back(&c);
  }
  return out;
}

// Runs grouped by grid point, in the order of their first run.
std::vector<std::vector<const SweepRun*>> ByPoint(const std::vector<SweepRun>& runs) {
  std::vector<std::vector<const SweepRun*>> points;
  std::map<std::string, std::size_t> index;
  for (const SweepRun& r : runs) {
    auto [it, added] = index.emplace(r.run.point_name, points.size());
    if (added) points.emplace_back();
    points[it->second].push_back(&r);
  }
  return points;
}

struct Stats {
  std::optional<double> median, min, max;
};

Stats StatsOf(const std::vector<const SweepRun*>& point, const Column& column) {
  std::vector<double> values;
  for (const SweepRun* r : point) {
    std::optional<double> v = column.value(r->outcome);
    if (v && std::isnan(*v)) continue;  // a diverged run's metric: no order to take a median of
    if (v) values.push_back(*v);
    else if (column.to_target) values.push_back(kInf);
  }
  if (values.empty()) return {};
  return {Median(values), *std::min_element(values.begin(), values.end()),
          *std::max_element(values.begin(), values.end())};
}

}  // namespace

Result<Baseline> ParseBaseline(std::string_view text, const Grid& grid) {
  if (text.empty()) return Baseline{};
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgument(fmt::format("--baseline '{}': expected field=value (a --grid field and one of its values)",
                                       text));
  }
  Baseline baseline{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  for (const GridAxis& axis : grid) {
    if (axis.field != baseline.field) continue;
    if (std::find(axis.values.begin(), axis.values.end(), baseline.value) == axis.values.end()) {
      return InvalidArgument(fmt::format("--baseline '{}': '{}' is not a --grid value of {}", text, baseline.value,
                                         baseline.field));
    }
    return baseline;
  }
  return InvalidArgument(fmt::format("--baseline '{}': {} is not a --grid field", text, baseline.field));
}

bool IncludesWallColumns(const std::vector<SweepRun>& runs) {
  return std::any_of(runs.begin(), runs.end(), [](const SweepRun& r) { return !r.outcome.deterministic; });
}

double Median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  if (n % 2 == 1) return values[n / 2];
  const double a = values[n / 2 - 1], b = values[n / 2];
  return std::isinf(b) ? b : (a + b) / 2;
}

std::string ResultsCsv(const Grid& grid, const Target& target, const std::vector<SweepRun>& runs) {
  const std::vector<const Column*> columns = IncludedColumns(runs);
  std::vector<std::string> header = FieldHeader(grid);
  for (const char* name : {"repeat", "run", "metric", "target", "status"}) header.emplace_back(name);
  for (const Column* c : columns) header.emplace_back(c->name);
  std::string text = Row(header);
  for (const SweepRun& r : runs) {
    std::vector<std::string> cells = r.run.values;
    cells.push_back(std::to_string(r.run.repeat));
    cells.push_back(r.run.name);
    cells.push_back(r.outcome.metric);
    cells.push_back(target.ToString());
    cells.push_back(RunStatusName(r.outcome.status));
    for (const Column* c : columns) cells.push_back(Number(c->value(r.outcome)));
    text += Row(cells);
  }
  return text;
}

std::string SummaryCsv(const Grid& grid, const std::vector<SweepRun>& runs) {
  const std::vector<const Column*> columns = IncludedColumns(runs);
  std::vector<std::string> header = FieldHeader(grid);
  header.emplace_back("runs");
  header.emplace_back("reached");
  header.emplace_back("timed_out");
  header.emplace_back("diverged");
  for (const Column* c : columns) {
    for (const char* stat : {"_median", "_min", "_max"}) header.push_back(std::string(c->name) + stat);
  }
  std::string text = Row(header);
  for (const auto& point : ByPoint(runs)) {
    std::vector<std::string> cells = point.front()->run.values;
    cells.push_back(std::to_string(point.size()));
    cells.push_back(std::to_string(std::count_if(point.begin(), point.end(), [](const SweepRun* r) {
      return r->outcome.epochs_to_target.has_value();
    })));
    for (const RunStatus status : {RunStatus::kTimedOut, RunStatus::kDiverged}) {
      cells.push_back(std::to_string(
          std::count_if(point.begin(), point.end(), [status](const SweepRun* r) { return r->outcome.status == status; })));
    }
    for (const Column* c : columns) {
      const Stats s = StatsOf(point, *c);
      for (const auto& v : {s.median, s.min, s.max}) cells.push_back(Number(v));
    }
    text += Row(cells);
  }
  return text;
}

std::string CurvesCsv(const Grid& grid, const std::vector<SweepRun>& runs) {
  const bool wall = IncludesWallColumns(runs);
  std::vector<std::string> header = FieldHeader(grid);
  for (const char* name : {"repeat", "run", "epoch", "clock", "metric_value", "sim_seconds"}) header.emplace_back(name);
  if (wall) header.emplace_back("wall_seconds");
  std::string text = Row(header);
  for (const SweepRun& r : runs) {
    for (const OutcomePoint& p : r.outcome.curve) {
      std::vector<std::string> cells = r.run.values;
      cells.push_back(std::to_string(r.run.repeat));
      cells.push_back(r.run.name);
      cells.push_back(std::to_string(p.epoch));
      cells.push_back(std::to_string(p.clock));
      cells.push_back(Number(p.metric_value));
      cells.push_back(Number(p.simulated_seconds));
      if (wall) cells.push_back(Number(p.wall_seconds));
      text += Row(cells);
    }
  }
  return text;
}

std::string WallCsv(const Grid& grid, const std::vector<SweepRun>& runs) {
  std::vector<std::string> header = FieldHeader(grid);
  for (const char* name : {"repeat", "run", "wall_seconds_to_target", "wall_seconds", "stall_seconds"}) {
    header.emplace_back(name);
  }
  std::string text = Row(header);
  for (const SweepRun& r : runs) {
    std::vector<std::string> cells = r.run.values;
    cells.push_back(std::to_string(r.run.repeat));
    cells.push_back(r.run.name);
    cells.push_back(Number(r.outcome.wall_seconds_to_target));
    cells.push_back(Number(r.outcome.wall_seconds));
    cells.push_back(Number(r.outcome.stall_seconds));
    text += Row(cells);
  }
  return text;
}

std::string SpeedupCsv(const Grid& grid, const Baseline& baseline, const std::vector<SweepRun>& runs) {
  const bool simulated =
      !runs.empty() && std::all_of(runs.begin(), runs.end(), [](const SweepRun& r) { return r.outcome.simulated; });
  const Column* time = nullptr;
  const Column* to_target = nullptr;
  for (const Column& c : Columns()) {
    if (std::string_view(c.name) == (simulated ? "sim_seconds" : "wall_seconds")) time = &c;
    if (std::string_view(c.name) == (simulated ? "sim_seconds_to_target" : "wall_seconds_to_target")) to_target = &c;
  }
  std::size_t axis = 0;
  while (axis < grid.size() && grid[axis].field != baseline.field) ++axis;
  std::vector<std::string> header = {"row"};
  for (std::size_t a = 0; a < grid.size(); ++a) header.push_back(grid[a].field);
  for (const char* name : {"baseline", "time", "seconds", "baseline_seconds", "speedup", "seconds_to_target",
                           "baseline_seconds_to_target", "speedup_to_target"}) {
    header.emplace_back(name);
  }
  std::string text = Row(header);
  if (axis == grid.size()) return text;

  // Points keyed by their values with the compared field blanked.
  const auto points = ByPoint(runs);
  const auto key_of = [axis](const GridRun& run) {
    std::vector<std::string> key = run.values;
    key[axis].clear();
    return key;
  };
  std::map<std::vector<std::string>, const std::vector<const SweepRun*>*> baselines;
  for (const auto& point : points) {
    if (point.front()->run.values[axis] == baseline.value) baselines[key_of(point.front()->run)] = &point;
  }
  std::map<std::string, std::vector<double>> speedups, speedups_to_target;  // per compared value
  std::vector<std::string> order;
  for (const auto& point : points) {
    const GridRun& run = point.front()->run;
    const std::string& value = run.values[axis];
    const auto base = baselines.find(key_of(run));
    if (value == baseline.value || base == baselines.end()) continue;
    if (std::find(order.begin(), order.end(), value) == order.end()) order.push_back(value);
    const Stats t = StatsOf(point, *time), bt = StatsOf(*base->second, *time);
    const Stats g = StatsOf(point, *to_target), bg = StatsOf(*base->second, *to_target);
    const auto ratio = [](const Stats& b, const Stats& x) -> std::optional<double> {
      if (!b.median || !x.median || !std::isfinite(*b.median) || !std::isfinite(*x.median) || *x.median <= 0) {
        return std::nullopt;
      }
      return *b.median / *x.median;
    };
    const std::optional<double> s = ratio(bt, t), sg = ratio(bg, g);
    if (s) speedups[value].push_back(*s);
    if (sg) speedups_to_target[value].push_back(*sg);
    std::vector<std::string> cells = {"point"};
    cells.insert(cells.end(), run.values.begin(), run.values.end());
    cells.push_back(baseline.value);
    cells.push_back(simulated ? "simulated" : "wall");
    for (const auto& v : {t.median, bt.median, s, g.median, bg.median, sg}) cells.push_back(Number(v));
    text += Row(cells);
  }
  const auto geomean = [](const std::vector<double>& v) -> std::optional<double> {
    if (v.empty()) return std::nullopt;
    double log_sum = 0;
    for (double x : v) log_sum += std::log(x);
    return std::exp(log_sum / static_cast<double>(v.size()));
  };
  for (const std::string& value : order) {
    std::vector<std::string> cells(grid.size() + 1, "");
    cells[0] = "geomean";
    cells[axis + 1] = value;
    cells.push_back(baseline.value);
    cells.push_back(simulated ? "simulated" : "wall");
    for (const auto& v : {std::optional<double>(), std::optional<double>(), geomean(speedups[value]),
                          std::optional<double>(), std::optional<double>(), geomean(speedups_to_target[value])}) {
      cells.push_back(Number(v));
    }
    text += Row(cells);
  }
  return text;
}

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path temp = path.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!(out << text) || !out.flush()) return InvalidArgument(fmt::format("{}: cannot write", path.string()));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) return InvalidArgument(fmt::format("{}: cannot write: {}", path.string(), ec.message()));
  return Status::Ok();
}

Status WriteTables(const std::filesystem::path& dir, const Grid& grid, const Target& target,
                   const Baseline& baseline, const std::vector<SweepRun>& runs) {
  STALELEARN_RETURN_IF_ERROR(WriteFileAtomically(dir / "results.csv", ResultsCsv(grid, target, runs)));
  STALELEARN_RETURN_IF_ERROR(WriteFileAtomically(dir / "summary.csv", SummaryCsv(grid, runs)));
  STALELEARN_RETURN_IF_ERROR(WriteFileAtomically(dir / "curves.csv", CurvesCsv(grid, runs)));
  STALELEARN_RETURN_IF_ERROR(WriteFileAtomically(dir / "wall.csv", WallCsv(grid, runs)));
  if (baseline.set()) {
    STALELEARN_RETURN_IF_ERROR(WriteFileAtomically(dir / "speedup.csv", SpeedupCsv(grid, baseline, runs)));
  }
  return Status::Ok();
}

}  // namespace stalelearn::cli::sweep
