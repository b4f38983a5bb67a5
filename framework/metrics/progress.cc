#include "framework/metrics/progress.h"

#include <fmt/format.h>

#include <cstdio>

namespace stalelearn::metrics {

void ProgressPrinter::Epoch(int epoch, int epochs, std::string_view metric, double value,
                            double elapsed_seconds) const {
  Line(fmt::format("epoch {}/{}  {} {:.4f}  elapsed {:.2f} s", epoch, epochs, metric, value, elapsed_seconds));
}

void ProgressPrinter::Line(std::string_view text) const {
  if (quiet_) return;
  const std::string line = fmt::format("[stalelearn] {}\n", text);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace stalelearn::metrics
