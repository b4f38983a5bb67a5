// Work an app kernel (or a merge) reports, so that a hardware-timing backend
// can charge simulated compute time for it (backends/timing/README.md).
// Counts are totals over the work described. Value type.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "framework/transport/virtual_time.h"

namespace stalelearn::metrics {

struct WorkCounters {
  double flops = 0;                    // floating-point (or integer) arithmetic operations
  double bytes = 0;                    // bytes read + written by the kernel
  std::int64_t random_row_accesses = 0;  // rows reached by a data-dependent index (divergent accesses)
  std::int64_t samples = 0;            // samples of the step (the clock loop counts them; calibrated kernels price them)
  // Of `samples`, those in the first epoch this run trains (the clock loop
  // sets it): a calibrated kernel prices their warm-up (first touches of
  // pages, caches and samplers filling).
  std::int64_t first_epoch_samples = 0;

  WorkCounters& operator+=(const WorkCounters& o) {
    flops += o.flops;
    bytes += o.bytes;
    random_row_accesses += o.random_row_accesses;
    samples += o.samples;
    first_epoch_samples += o.first_epoch_samples;
    return *this;
  }
};

// What a timing backend charges for a kernel's counters.
inline transport::ComputeWork ToComputeWork(const WorkCounters& work) {
  return {.flops = work.flops,
          .bytes = work.bytes,
          .random_accesses = static_cast<double>(work.random_row_accesses),
          .samples = static_cast<double>(work.samples),
          .first_epoch_samples = static_cast<double>(work.first_epoch_samples)};
}
// The merge work of a merger's counters: `flops` element updates and `bytes`
// = batch bytes read + master bytes read and written (4-byte elements, as
// ShardMerger counts them), so the batch is bytes - 2 * 4 * flops.
inline transport::MergeWork ToMergeWork(const WorkCounters& work) {
  const double ops = std::max(0.0, work.flops);
  const double batch_bytes = std::max(0.0, work.bytes - 2.0 * 4.0 * ops);
  return {static_cast<std::uint64_t>(std::llround(batch_bytes)), static_cast<std::uint64_t>(std::llround(ops))};
}

}  // namespace stalelearn::metrics
