// The CSV files of a sweep, made from the runs' outcomes (outcome.h). Each
// function returns the file's text; `WriteTables` writes them into DIR.
//
//   results.csv  one row per run: every grid field, repeat, run, metric, target,
//                status (ok; timeout: stopped by --run-timeout; diverged: train
//                failed with a NaN/inf model; every value empty but for ok), final, epochs/clocks/simulated seconds to target, simulated
//                makespan and breakdown, bytes, largest staleness observed
//   summary.csv  one row per grid point: runs, reached, timed_out, diverged, and the median, min
//                and max over repeats of every numeric column of results.csv
//   curves.csv   every run's curve: epoch, clock, metric, simulated seconds
//   wall.csv     per run: wall seconds to target, wall seconds, stall seconds
//   speedup.csv  (with a baseline) row "point" per grid point: the
//                baseline's median time (simulated makespan, or wall) over
//                its own, and the same for time to target; then rows
//                "geomean": the geometric mean per value of the compared field
//
// Determinism: wall-clock figures (wall seconds, stall seconds) appear in
// results.csv, summary.csv and curves.csv only when some run is not simulated
// in deterministic emulation; they are always in wall.csv. So on the timing
// backend with ranks as threads a rerun writes byte-identical results,
// summary, curves and speedup files. A run that never reached the target
// has empty to-target cells; medians count it as infinitely late. A NaN
// (a diverged run's metric) is an empty cell and left out of the medians.
// Value types; stateless functions, safe from any thread.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "apps/cli/sweep/grid.h"
#include "apps/cli/sweep/outcome.h"

namespace stalelearn::cli::sweep {

struct SweepRun {
  GridRun run;
  RunOutcome outcome;
};

struct Baseline {
  std::string field;  // a grid field
  std::string value;  // one of its values
  bool set() const { return !field.empty(); }
};

Result<Baseline> ParseBaseline(std::string_view text, const Grid& grid);  // "field=value"

// True when wall-clock columns belong in the deterministic tables.
bool IncludesWallColumns(const std::vector<SweepRun>& runs);

std::string ResultsCsv(const Grid& grid, const Target& target, const std::vector<SweepRun>& runs);
std::string SummaryCsv(const Grid& grid, const std::vector<SweepRun>& runs);
std::string CurvesCsv(const Grid& grid, const std::vector<SweepRun>& runs);
std::string WallCsv(const Grid& grid, const std::vector<SweepRun>& runs);
std::string SpeedupCsv(const Grid& grid, const Baseline& baseline, const std::vector<SweepRun>& runs);

// Writes the files above (speedup.csv only with a baseline), each through a
// temporary file and a rename. kInvalidArgument naming the file on failure.
Status WriteTables(const std::filesystem::path& dir, const Grid& grid, const Target& target,
                   const Baseline& baseline, const std::vector<SweepRun>& runs);

// Median of `values`; +infinity counts as a value (a target never reached).
double Median(std::vector<double> values);

// Writes `text` to `path` through `path`.tmp and a rename.
Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text);

}  // namespace stalelearn::cli::sweep
