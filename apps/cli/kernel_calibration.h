// One app's compute step measured on this machine (`stalelearn calibrate
// --config FILE`): the config runs for real with one compute and one memory
// rank as threads (each has a core of a 2-core machine to itself), long
// enough to time (about half a second of training), and the compute rank's
// seconds per sample, stalls left out, become the compute preset's
// KernelCost (timing_presets.proto). That covers the kernel and the compute
// rank's own data plane (first-touch log, deltas, refresh installs), which
// the roofline of the device presets does not count.
//
// Thread-safety: blocks the calling thread while the child `train` runs;
// writes only under `scratch`.
#pragma once

#include <filesystem>
#include <string>

#include "apps/cli/host_calibration.h"
#include "framework/core/status.h"

namespace stalelearn::cli {

struct KernelCalibration {
  std::string config_name;  // the config's `name` (e.g. mf-movielens): the preset is NAME-cpu-<config_name>
  Measured ns_per_sample;
};

// kInvalidArgument (one line) when the config does not train; `quick`: one epoch.
Result<KernelCalibration> MeasureKernel(const std::filesystem::path& config, const std::filesystem::path& scratch,
                                        bool quick);

// The host's compute preset with `kernel` as its KernelCost.
proto::ComputePreset KernelPresetOf(const HostCalibration& host, const KernelCalibration& kernel,
                                    const std::string& name, const std::string& source_prefix);

}  // namespace stalelearn::cli
