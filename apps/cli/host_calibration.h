// The machine at hand measured for the timing backend's presets
// (`stalelearn calibrate`, backends/timing/README.md "Validation"): one core's
// arithmetic peak, streaming bandwidth, memory latency and memory-level
// parallelism, and how its idle waits spin, yield and sleep (the compute
// preset), and the project's own merge kernel per
// merge policy (memory presets of the `dram` model). Every number comes with
// the method that measured it, so a preset written from it tags each
// Quantity MEASURED with its source.
//
//   const HostCalibration host = MeasureHost({.quick = false});
//   proto::ComputePreset cpu = ComputePresetOf(host, "calibrated-cpu", "stalelearn calibrate on vm, 2026-12-02");
//
// Single-threaded measurements on the calling thread; each allocates its own
// buffers (quick: ~16 MiB, else ~512 MiB) and frees them before returning.
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "framework/proto/timing_presets.pb.h"

namespace stalelearn::cli {

struct Measured {
  double value = 0;
  std::string method;  // what was timed, e.g. "median of 5 triad passes over 3 x 128 MiB"
};

// A shard that fits the caches (MovieLens-sized models) merges several times
// faster than one in DRAM: both are measured, and a run picks the preset
// that matches its shard.
// 256 KiB: with an adaptive policy's state beside it (adam keeps two more
// copies) it still fits a 1 MiB L2, as a MovieLens shard (220 KB) does.
inline constexpr std::int64_t kCachedMasterBytes = std::int64_t{256} << 10;

struct MergeCalibration {
  std::string policy;  // sum, average, adagrad, adam
  bool cached = false;  // master of kCachedMasterBytes (else far beyond the caches)
  Measured bandwidth_gb_per_s;  // (batch bytes + 8 x element updates) / second, as the dram model prices a merge
};

struct HostCalibration {
  Measured peak_gflops;
  Measured bandwidth_gb_per_s;
  Measured transaction_bytes;
  Measured latency_ns;
  Measured outstanding;
  Measured atomic_rmw_ns;
  // How an idle wait behaves (framework/core/wait.h's Backoff): one spin
  // round, one yield, a sleep's excess over what it asked for; and what a
  // thread switch costs.
  Measured poll_ns;
  Measured yield_ns;
  Measured sleep_overshoot_ns;
  Measured switch_ns;  // one hand-off of the core between two threads
  std::vector<MergeCalibration> merges;
};

struct HostCalibrationOptions {
  bool quick = false;  // small buffers and few repetitions (tests): about a second
  std::vector<std::string> policies = {"sum", "average", "adagrad", "adam"};
};

HostCalibration MeasureHost(const HostCalibrationOptions& options);

// A Quantity tagged MEASURED, its value to 4 significant digits, its source
// "<prefix>: <method>" (every calibrated preset's numbers are made here).
proto::Quantity QuantityOf(const Measured& m, const std::string& prefix);

// Presets from a measurement; `source_prefix` (machine and date) starts every
// Quantity's source. The memory preset uses `merge` (one policy's figure).
proto::ComputePreset ComputePresetOf(const HostCalibration& host, const std::string& name,
                                     const std::string& source_prefix);
// <prefix>-host[-cached][-POLICY] (no POLICY for sum).
std::string MemoryPresetName(const std::string& prefix, const MergeCalibration& merge);
// `host_path`: the memory rank's data plane per row around the merge
// (kernel_calibration.h MeasureDataPlane), if measured.
proto::MemoryPreset MemoryPresetOf(const HostCalibration& host, const MergeCalibration& merge,
                                   const std::optional<Measured>& host_path, const std::string& name,
                                   const std::string& source_prefix);
// The cached sum merge's bandwidth (what the data plane's measurement
// subtracts the merge by); the first merge measured if sum was not.
double CachedSumBandwidth(const HostCalibration& host);

}  // namespace stalelearn::cli
