// Calibration of a link preset of the timing backend from measurements of the
// real transport (`stalelearn calibrate`): the three numbers of a LinkPreset
// (framework/proto/timing_presets.proto) are measured with the RMA bench
// (rma_measure.h, 2 ranks as threads of this process) and derived so that the
// timing backend's prices (backends/timing/README.md, "Charging transport
// operations": put = O at issue, visible after L + B/bandwidth; get = O + 2L +
// B/bandwidth) reproduce what was measured:
//
//   per_op_overhead_ns  O = time per operation of a windowed run of 8-B puts
//                           (window 16, each window flushed): seconds / iters
//   latency_ns          L = (median round trip of single 8-B gets - O) / 2,
//                           floored at 1 ns when the round trip is not above O
//   bandwidth_gb_per_s      windowed put bandwidth at 1 MiB per operation
//
//   auto preset = CalibrateLink({.preset_name = "calibrated-ucx-shm", .backend = "ucx",
//                                .description = "UCX shared memory on host vm",
//                                .source_prefix = "stalelearn calibrate on host vm, 2026-12-02"});
//
// Every Quantity is tagged MEASURED; its source names what was measured and
// the equivalent `stalelearn bench rma` command. Values keep 4 significant
// digits (more would be noise).
//
// Thread-safety: free function without shared state; it starts (and joins)
// the two rank threads of each measurement itself. Not meaningful to run two
// calibrations at once: they would disturb each other's timings.
#pragma once

#include <map>
#include <string>

#include "framework/core/status.h"
#include "framework/proto/timing_presets.pb.h"

namespace stalelearn::cli {

struct LinkCalibrationSpec {
  std::string preset_name;   // e.g. "calibrated-ucx-shm"; must be a file stem
  std::string backend;       // "local" or "ucx"
  std::map<std::string, std::string> backend_options;  // e.g. {{"tls", "tcp"}}; empty = backend defaults
  std::string description;   // the preset's description line
  std::string source_prefix; // e.g. "stalelearn calibrate on host vm, 2026-12-02" — prepended to every Quantity.source
  bool quick = false;        // fewer iterations (tests): the whole calibration of one link in < 3 s
};

// Measures one link with MeasureRmaInThreads and returns a LinkPreset whose
// three Quantities are tagged MEASURED with a source naming the measurement.
// The preset has passed backends::timing::ValidatePreset. Errors are one line
// naming the link (and the quantity, for a bad measurement): kInvalidArgument
// for a bad preset name, the transport's Status for a failed measurement,
// kInternal for a non-finite or zero result.
Result<proto::LinkPreset> CalibrateLink(const LinkCalibrationSpec& spec);

}  // namespace stalelearn::cli
