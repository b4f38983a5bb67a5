// One app's compute step measured on this machine (`stalelearn calibrate
// --config FILE`): the config runs for real with one compute and one memory
// rank as threads (each has a core of a 2-core machine to itself), for one
// epoch and for about a second of training (the median of 5 and 3 runs
// each). The compute rank's seconds per sample, stalls left out, give the
// compute preset's KernelCost (timing_presets.proto): the steady rate (the
// difference between the two) and the first epoch's warm-up beyond it. That
// covers the kernel and the compute rank's own data plane (first-touch log,
// deltas), which the roofline of the device presets does not count. A 2:1
// run then measures the data plane that one compute rank does not have
// (MeasureDataPlane): refreshes of rows other ranks wrote, and the memory
// rank's path around its merges.
//
// Thread-safety: blocks the calling thread while the child `train` runs;
// writes only under `scratch`.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "apps/cli/host_calibration.h"
#include "framework/core/status.h"

namespace stalelearn::cli {

// The data plane around the kernel, measured in a 2:1 run of the config
// (MeasureDataPlane): thread CPU, so cores shared by three threads do not
// inflate it.
struct DataPlaneCalibration {
  Measured ns_per_row_refreshed;  // compute side: a refresh's work per row installed
  Measured host_path_ns_per_row;  // memory side: decode, change marks and publish per row delta
  // The first epoch's refreshes beyond ns_per_row_refreshed, per sample of
  // that epoch (first touches), if the longer run showed any.
  std::optional<Measured> first_epoch_refresh_ns_per_sample;
};

struct KernelCalibration {
  std::string config_name;  // the config's `name` (e.g. mf-movielens): the preset is NAME-cpu-<config_name>
  Measured ns_per_sample;  // the steady rate
  std::optional<Measured> first_epoch_ns_per_sample;  // a first epoch's warm-up per sample, if any
  int epochs = 1;  // of the timed runs
  std::optional<DataPlaneCalibration> data_plane;
};

// kInvalidArgument (one line) when the config does not train; `quick`: one epoch.
Result<KernelCalibration> MeasureKernel(const std::filesystem::path& config, const std::filesystem::path& scratch,
                                        bool quick);

// `config` at 2:1 for `epochs` under the sum merge: a refresh's CPU per row
// installed, and the memory rank's busy CPU per row delta less its merges
// priced at `sum_merge_gb_per_s` (the cached sum preset's bandwidth).
Result<DataPlaneCalibration> MeasureDataPlane(const std::filesystem::path& config,
                                              const std::filesystem::path& scratch, int epochs,
                                              double sum_merge_gb_per_s);

// The host's compute preset with `kernel` as its KernelCost.
proto::ComputePreset KernelPresetOf(const HostCalibration& host, const KernelCalibration& kernel,
                                    const std::string& name, const std::string& source_prefix);

}  // namespace stalelearn::cli
