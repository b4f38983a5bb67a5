#include "apps/cli/sweep/plots.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "apps/cli/sweep/process.h"

namespace stalelearn::cli::sweep {
namespace {

std::string Num(std::optional<double> v) {
  return v && std::isfinite(*v) ? fmt::format("{:.15g}", *v) : "NaN";
}

// The last component of each field path: "consistency.staleness" ->
// "staleness"; joined fields "consistency.mode:consistency.staleness" -> "mode:staleness".
std::string ShortField(const std::string& field) {
  std::string out;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = field.find(':', start);
    const std::string part = field.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    const std::size_t dot = part.rfind('.');
    out += dot == std::string::npos ? part : part.substr(dot + 1);
    if (colon == std::string::npos) return out;
    out += ':';
    start = colon + 1;
  }
}


std::string Label(const Grid& grid, const std::vector<std::string>& values, std::size_t skip) {
  std::string label;
  for (std::size_t a = 0; a < grid.size(); ++a) {
    if (a == skip) continue;
    if (!label.empty()) label += " ";
    label += ShortField(grid[a].field) + "=" + values[a];
  }
  return label.empty() ? "all" : label;
}

constexpr const char* kPreamble =
    "# gnuplot script written by `stalelearn sweep`; run `gnuplot FILE.gp` in this directory.\n"
    "PNG = strstrt(GPVAL_TERMINALS, 'pngcairo') > 0 ? 'pngcairo' : 'png'\n"
    "set termoption noenhanced\nset key outside right\nset grid\nset datafile missing 'NaN'\n";

// One figure's script: `body` drawn as PNG, then as SVG.
std::string Figure(const std::string& stem, const std::string& body) {
  return fmt::format(
      "{2}set terminal @PNG size 900,600 noenhanced\nset output '{0}.png'\n{1}\n"
      "set terminal svg size 900,600 dynamic noenhanced\nset output '{0}.svg'\n{1}\nunset output\n",
      stem, body, kPreamble);
}

// A panel with nothing to draw (gnuplot rejects an empty plot).
std::string EmptyPanel(const std::string& why) {
  return fmt::format("set label 1 {} at graph 0.3, graph 0.5\nunset xtics\nplot [0:1] [0:1] NaN notitle\n"
                     "unset label 1\nset xtics\n",
                     GnuplotQuote(why));
}

}  // namespace

std::string GnuplotQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

Status WritePlotScript(const std::filesystem::path& plot_dir, const Grid& grid, const Target& target,
                       const std::vector<SweepRun>& runs) {
  std::filesystem::create_directories(plot_dir);
  if (runs.empty()) return WriteFileAtomically(plot_dir / "figures.txt", "");
  const bool simulated = std::all_of(runs.begin(), runs.end(), [](const SweepRun& r) { return r.outcome.simulated; });
  const std::string metric = runs.front().outcome.metric;

  // Curves of repeat 1: columns clock, time, metric; one block per point.
  std::string curves;
  std::vector<std::string> titles;
  for (const SweepRun& r : runs) {
    if (r.run.repeat != 1) continue;
    curves += "# " + r.run.point_name + "\n";
    for (const OutcomePoint& p : r.outcome.curve) {
      curves += fmt::format("{} {} {}\n", p.clock, Num(simulated ? p.simulated_seconds : p.wall_seconds),
                            Num(p.metric_value));
    }
    curves += "\n\n";
    titles.push_back(Label(grid, r.run.values, grid.size()));
  }
  STALELEARN_RETURN_IF_ERROR(WriteFileAtomically(plot_dir / "curves.dat", curves));

  std::vector<std::pair<std::string, std::string>> figures;  // stem, script
  const auto curve_plot = [&](int x_column, const std::string& xlabel) {
    std::string body = fmt::format("set xlabel {}\nset ylabel {}\n", GnuplotQuote(xlabel), GnuplotQuote(metric));
    if (target.set) body += fmt::format("set arrow from graph 0, first {0} to graph 1, first {0} nohead dt 2\n",
                                        fmt::format("{:.15g}", target.value));
    body += "plot ";
    for (std::size_t i = 0; i < titles.size(); ++i) {
      body += fmt::format("{}'curves.dat' index {} using {}:3 with linespoints title {}", i ? ", " : "", i, x_column,
                          GnuplotQuote(titles[i]));
    }
    return body;
  };
  figures.emplace_back("metric_vs_clock", curve_plot(1, "clock"));
  figures.emplace_back("metric_vs_time", curve_plot(2, simulated ? "simulated seconds" : "wall seconds"));

  // Per field: medians per point; one block per combination of the other fields.
  const auto points = [&] {
    std::vector<std::vector<const SweepRun*>> out;
    std::map<std::string, std::size_t> index;
    for (const SweepRun& r : runs) {
      auto [it, added] = index.emplace(r.run.point_name, out.size());
      if (added) out.emplace_back();
      out[it->second].push_back(&r);
    }
    return out;
  }();
  const auto median_of = [](const std::vector<const SweepRun*>& point, auto get, bool to_target) {
    std::vector<double> values;
    for (const SweepRun* r : point) {
      std::optional<double> v = get(r->outcome);
      if (v) values.push_back(*v);
      else if (to_target) values.push_back(INFINITY);
    }
    return values.empty() ? std::optional<double>() : std::optional<double>(Median(values));
  };
  for (std::size_t a = 0; a < grid.size(); ++a) {
    std::map<std::string, std::string> blocks;  // other values -> rows
    std::vector<std::string> order;
    bool any_clocks = false, any_seconds = false;
    for (const auto& point : points) {
      const GridRun& run = point.front()->run;
      const std::string key = Label(grid, run.values, a);
      if (!blocks.count(key)) order.push_back(key);
      const std::size_t x = static_cast<std::size_t>(
          std::find(grid[a].values.begin(), grid[a].values.end(), run.values[a]) - grid[a].values.begin());
      const auto clocks = median_of(point, [](const RunOutcome& o) {
        return o.clocks_to_target ? std::optional<double>(static_cast<double>(*o.clocks_to_target)) : std::nullopt;
      }, true);
      const auto seconds = median_of(point, [simulated](const RunOutcome& o) {
        return simulated ? o.sim_seconds_to_target : o.wall_seconds_to_target;
      }, true);
      const auto final = median_of(point, [](const RunOutcome& o) { return std::optional<double>(o.final_value); },
                                   false);
      any_clocks = any_clocks || (clocks && std::isfinite(*clocks));
      any_seconds = any_seconds || (seconds && std::isfinite(*seconds));
      blocks[key] += fmt::format("{} \"{}\" {} {} {}\n", x, run.values[a], Num(clocks), Num(seconds), Num(final));
    }
    const std::string stem = (target.set ? "to_target_vs_" : "final_vs_") + SafeFileName(grid[a].field);
    std::string data;
    for (const std::string& key : order) data += "# " + key + "\n" + blocks[key] + "\n\n";
    STALELEARN_RETURN_IF_ERROR(WriteFileAtomically(plot_dir / (stem + ".dat"), data));
    const auto plot = [&](int column) {
      if ((column == 3 && !any_clocks) || (column == 4 && !any_seconds)) return EmptyPanel("target not reached");
      std::string body = "plot ";
      for (std::size_t i = 0; i < order.size(); ++i) {
        body += fmt::format("{}'{}.dat' index {} using 1:{}:xtic(2) with linespoints title {}", i ? ", " : "",
                            stem, i, column, GnuplotQuote(order[i]));
      }
      return body + "\n";
    };
    std::string body = fmt::format("set xlabel {}\nset offsets 0.2, 0.2, 0, 0\n", GnuplotQuote(grid[a].field));
    if (target.set) {
      body += fmt::format("set multiplot layout 2,1 title {}\n",
                          GnuplotQuote(fmt::format("to {} {} (median over repeats)", metric, target.ToString())));
      body += "set ylabel 'clocks to target'\n" + plot(3);
      body += fmt::format("set ylabel {}\n", GnuplotQuote(simulated ? "simulated seconds to target" : "wall seconds to target"));
      body += plot(4) + "unset multiplot";
    } else {
      body += fmt::format("set ylabel {}\n", GnuplotQuote("final " + metric + " (median)")) + plot(5);
    }
    figures.emplace_back(stem, body);
  }
  std::string list;
  for (const auto& [stem, body] : figures) {
    STALELEARN_RETURN_IF_ERROR(WriteFileAtomically(plot_dir / (stem + ".gp"), Figure(stem, body)));
    list += stem + "\n";
  }
  return WriteFileAtomically(plot_dir / "figures.txt", list);
}

bool DrawPlots(const std::filesystem::path& plot_dir, std::string& why) {
  const std::filesystem::path dir = std::filesystem::absolute(plot_dir);
  std::ifstream list(dir / "figures.txt");
  std::vector<std::string> failed;
  for (std::string stem; std::getline(list, stem);) {
    const std::filesystem::path log = dir / (stem + ".log");
    // gnuplot resolves the data files against its working directory: cd there first.
    Result<int> code = RunProcess({"gnuplot", "-e", "cd " + GnuplotQuote(dir.string()), (dir / (stem + ".gp")).string()}, log);
    if (!code.ok()) {
      why = "gnuplot not found (Debian package gnuplot-nox; ./deploy/install-deps.sh installs it)";
      return false;
    }
    if (*code != 0) failed.push_back(fmt::format("{}: {}", stem, LastLine(log)));
    else std::filesystem::remove(log);
  }
  if (failed.empty()) return true;
  why = fmt::format("gnuplot failed on {} figure(s); {}", failed.size(), failed.front());
  return false;
}

}  // namespace stalelearn::cli::sweep
