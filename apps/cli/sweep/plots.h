// The plots of a sweep, drawn by gnuplot (Debian gnuplot-nox) as PNG and SVG
// into DIR/plots: metric against clock, metric against time (simulated when
// every run is simulated, else wall), and, per grid field, clocks and
// seconds to the target against the field's values (the final metric when
// there is no target), one line per combination of the other fields.
// Curves are repeat 1's; to-target figures are medians over repeats.
//
// `WritePlotScript` writes the data files and one gnuplot script per figure
// (STEM.gp, listed in figures.txt; deterministic text); `DrawPlots` runs
// gnuplot on each. Stateless; not thread-safe per directory.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "apps/cli/sweep/tables.h"

namespace stalelearn::cli::sweep {

// `text` as a gnuplot single-quoted string.
std::string GnuplotQuote(std::string_view text);

Status WritePlotScript(const std::filesystem::path& plot_dir, const Grid& grid, const Target& target,
                       const std::vector<SweepRun>& runs);

// Runs gnuplot on each figure (a failed one leaves STEM.log). False with a reason in
// `why` when gnuplot is missing or failed: plots are optional, tables not.
bool DrawPlots(const std::filesystem::path& plot_dir, std::string& why);

}  // namespace stalelearn::cli::sweep
