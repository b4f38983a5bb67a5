#include "apps/cli/sweep/grid.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace stalelearn::cli::sweep {
namespace {

std::vector<std::string> Split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(separator, start);
    parts.emplace_back(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

}  // namespace

Result<Grid> ParseGrid(const std::vector<std::string>& axes) {
  Grid grid;
  for (const std::string& text : axes) {
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument(fmt::format("--grid '{}': expected field=v1,v2,...", text));
    }
    GridAxis axis{text.substr(0, eq), Split(std::string_view(text).substr(eq + 1), ',')};
    for (std::size_t i = 0; i < axis.values.size(); ++i) {
      if (axis.values[i].empty()) return InvalidArgument(fmt::format("--grid '{}': empty value", text));
      if (Split(axis.values[i], ':').size() != Split(axis.field, ':').size()) {
        return InvalidArgument(fmt::format("--grid '{}': value '{}' needs one part per field of {} (joined by ':')",
                                           text, axis.values[i], axis.field));
      }
      if (std::find(axis.values.begin(), axis.values.begin() + static_cast<std::ptrdiff_t>(i), axis.values[i]) !=
          axis.values.begin() + static_cast<std::ptrdiff_t>(i)) {
        return InvalidArgument(fmt::format("--grid '{}': value '{}' given twice", text, axis.values[i]));
      }
    }
    for (const GridAxis& other : grid) {
      if (other.field == axis.field) {
        return InvalidArgument(fmt::format("--grid: field '{}' given twice (list all its values in one --grid)",
                                           axis.field));
      }
    }
    grid.push_back(std::move(axis));
  }
  return grid;
}

std::vector<GridRun> ExpandGrid(const Grid& grid, int repeats, std::string_view repeat_field) {
  std::vector<GridRun> runs;
  std::vector<std::size_t> index(grid.size(), 0);
  while (true) {
    GridRun point;
    for (std::size_t a = 0; a < grid.size(); ++a) {
      const std::string& value = grid[a].values[index[a]];
      point.values.push_back(value);
      const std::vector<std::string> fields = Split(grid[a].field, ':'), parts = Split(value, ':');
      for (std::size_t f = 0; f < fields.size(); ++f) point.overrides.push_back(fields[f] + "=" + parts[f]);
      if (!point.point_name.empty()) point.point_name += "__";
      point.point_name += SafeFileName(grid[a].field + "=" + value);
    }
    if (point.point_name.empty()) point.point_name = "base";
    for (int r = 1; r <= repeats; ++r) {
      GridRun run = point;
      run.repeat = r;
      run.name = fmt::format("{}__r{}", point.point_name, r);
      if (!repeat_field.empty()) run.overrides.push_back(fmt::format("{}={}", repeat_field, r));
      runs.push_back(std::move(run));
    }
    // Odometer: the last axis varies fastest.
    std::size_t a = grid.size();
    while (a > 0) {
      --a;
      if (++index[a] < grid[a].values.size()) break;
      index[a] = 0;
      if (a == 0) return runs;
    }
    if (grid.empty()) return runs;
  }
}

std::string SafeFileName(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '=' || c == '+' ||
                    c == '-';
    if (!ok) c = '_';
  }
  return out;
}

}  // namespace stalelearn::cli::sweep
