// Work an app kernel (or a merge) reports, so that a hardware-timing backend
// can charge simulated compute time for it (backends/timing/README.md).
// Counts are totals over the work described. Value type.
#pragma once

#include <cstdint>

namespace stalelearn::metrics {

struct WorkCounters {
  double flops = 0;                    // floating-point (or integer) arithmetic operations
  double bytes = 0;                    // bytes read + written by the kernel
  std::int64_t random_row_accesses = 0;  // rows reached by a data-dependent index (divergent accesses)

  WorkCounters& operator+=(const WorkCounters& o) {
    flops += o.flops;
    bytes += o.bytes;
    random_row_accesses += o.random_row_accesses;
    return *this;
  }
};

}  // namespace stalelearn::metrics
