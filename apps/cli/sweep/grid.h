// The grid of a sweep: `--grid field=v1,v2,...` axes (config fields in
// `--set` syntax), expanded into the cartesian product of their values,
// times the repeats. Each run has a stable, file-system-safe name, so a
// rerun of the same sweep finds the reports of the runs already done.
//
//   Grid grid = ValueOrThrow(ParseGrid({"consistency.staleness=0,2", "consistency.mode=SSP,ASP"}));
//   for (const GridRun& run : ExpandGrid(grid, /*repeats=*/3, "training.straggler.seed")) ...
//
// The first axis varies slowest (runs of one point are adjacent, repeats
// innermost). Value types; stateless functions, safe from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::cli::sweep {

// A field, or several joined by ':' whose values move together (one value
// per field, joined by ':'): "consistency.mode:consistency.staleness=SSP:0,
// SSP:2,ASP:0" is three points, not a product.
struct GridAxis {
  std::string field;                // "consistency.staleness"
  std::vector<std::string> values;  // in the order given
};

using Grid = std::vector<GridAxis>;

// One run of the sweep: the value of every axis, its repeat (1-based) and
// the `--set` assignments that make it.
struct GridRun {
  std::vector<std::string> values;  // one per axis, in axis order
  int repeat = 1;
  std::string point_name;           // the values without the repeat: "consistency.mode=SSP__consistency.staleness=2"
  std::string name;                 // point_name + "__r<repeat>": the run's directory
  std::vector<std::string> overrides;
};

// Parses "field=v1,v2,..." axes. Errors (one line, kInvalidArgument): no '=',
// an empty field or value, a field given twice, a value given twice, a
// joined value with another number of parts than its joined field.
Result<Grid> ParseGrid(const std::vector<std::string>& axes);

// The cartesian product of the axes (an empty grid is one point), each
// point `repeats` times. With `repeat_field` not empty, repeat r also sets
// repeat_field=r, so that repeats differ in that seed (on the deterministic
// timing backend identical runs would repeat the same numbers).
std::vector<GridRun> ExpandGrid(const Grid& grid, int repeats, std::string_view repeat_field);

// `text` with every character outside [A-Za-z0-9._=+-] replaced by '_'.
std::string SafeFileName(std::string_view text);

}  // namespace stalelearn::cli::sweep
