// Progress lines on stderr during a run: one per evaluated epoch, e.g.
//   [stalelearn] epoch 3/20  test_rmse 0.9123  elapsed 1.24 s
// Thread-safe (one fwrite per line); silent when quiet.
#pragma once

#include <string_view>

namespace stalelearn::metrics {

class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool quiet) : quiet_(quiet) {}
  void Epoch(int epoch, int epochs, std::string_view metric, double value, double elapsed_seconds) const;
  void Line(std::string_view text) const;

 private:
  bool quiet_;
};

}  // namespace stalelearn::metrics
