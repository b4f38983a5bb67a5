// Options of the 'timing' backend: its config section (timing_options.proto,
// `backend { name: "timing" timing { ... } }`, resolved with its declared
// defaults; BackendContext::params), or, for a backend created directly in
// code without a section (tests, bench rma --backend-option), the same
// fields as key=value options over the declared defaults (one source or the
// other, never both). Keys, the section's fields (defaults:
// timing_options.proto):
//   inner       backend to wrap: "local" (default) or "ucx"; never "timing"
//   memory      memory-side preset (default "hmc2")
//   link        link preset (default "pcie4-x16")
//   compute     compute preset (default "gpu-gtx580")
//   preset_dir  directory of presets (default: DefaultPresetDir(), default_preset_dir.h)
//   schedule    "auto" (default: virtual-time when the ranks are threads of one
//               process), "virtual-time" (required; error otherwise) or "none"
//   link_bandwidth_gb_per_s  replaces the link preset's bandwidth (GB/s, > 0):
//               a bandwidth cap, or sweep (deploy/experiments/bandwidth.sh)
//   quantum_ns  window (ns of virtual time, >= 0) within which turns go by
//               rank instead of time (virtual_time_scheduler.h, the quantum):
//               fewer thread switches, operations out of order by less than
//               it; default 0, the strict order
//   cores       > 0: the ranks are threads sharing this many cores (emulation
//               on a small machine, timing-validation.sh). In deterministic
//               emulation compute and host-DRAM merge work is stretched by
//               max(1, B / cores) when it is charged, B the ranks working (or
//               about to) at that instant: a rank that waits has backed off
//               into sleeps and gives its core away
//               (VirtualTimeScheduler::WorkOnSharedCores); a link operation's overhead
//               and the idle polls by max(1, R / cores), R the ranks. Without
//               the scheduler (mpirun) all of it by R / cores, every rank
//               taken as runnable. Default 0: a device of its own per rank
//   shared_ports  true: one link per rank's host, gets from a rank share it
//               (serving_links.h); ranks as threads only. Default false
//   inner.KEY   passed to the inner backend as KEY (from the config: the
//               inner backend's own section, config.backend.wrapped)
// An unknown key is an error naming it and the known ones.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include <google/protobuf/any.pb.h>

#include "backends/timing/timing_options.pb.h"
#include "framework/core/status.h"
#include "framework/proto/config.pb.h"

namespace stalelearn::backends::timing {

enum class ScheduleMode { kAuto, kVirtualTime, kNone };

// The options as the backend uses them (defaults: the section's declared ones).
struct TimingOptions {
  std::string inner;
  std::string memory;
  std::string link;
  std::string compute;
  std::filesystem::path preset_dir;  // empty: DefaultPresetDir()
  ScheduleMode schedule = ScheduleMode::kAuto;
  double link_bandwidth_gb_per_s = 0;  // 0: the link preset's
  double quantum_ns = 0;               // 0: strict (time, rank) order
  int cores = 0;                       // 0: every rank has its own device
  bool shared_ports = false;           // gets share the serving rank's link (serving_links.h)
  std::map<std::string, std::string> inner_options;
};

// `params`: the resolved section (config.backend.params), or null for the
// declared defaults with `options` by key over them (kInvalidArgument given
// both). Errors name the option.
Result<TimingOptions> ParseTimingOptions(const google::protobuf::Any* params,
                                         const std::map<std::string, std::string>& options);
inline Result<TimingOptions> ParseTimingOptions(const std::map<std::string, std::string>& options) {
  return ParseTimingOptions(nullptr, options);
}

// The section's resolve function (after its declared rules): what the
// rules cannot say (inner is not "timing").
Status ResolveTimingSection(stalelearn::timing::TimingBackendOptions& section);

}  // namespace stalelearn::backends::timing
