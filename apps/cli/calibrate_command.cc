// `stalelearn calibrate --out DIR`: measures the machine at hand and writes
// timing-backend presets for it (backends/timing/README.md "Validation"):
//   DIR/compute/NAME-cpu.pbtxt            one core (host_calibration.h)
//   DIR/memory/NAME-host.pbtxt            DRAM merged by one core, 'sum' policy
//   DIR/memory/NAME-host-POLICY.pbtxt     the same for average, adagrad, adam
//   DIR/memory/NAME-host-cached[-POLICY]  the same with a 1 MiB shard (in cache)
//   DIR/link/NAME-LINK.pbtxt              local (ranks as threads), ucx-shm, ucx-tcp
//                                         (link_calibration.h: one-sided RMA)
//   DIR/compute/NAME-cpu-CONFIG.pbtxt     per --config FILE: that config's compute
//                                         step per sample, measured by running it
//                                         (kernel_calibration.h; CONFIG = its name)
// plus a copy of the shipped presets, so DIR is a whole preset directory:
//   stalelearn train ... --set backend.name=timing --set backend.timing.preset_dir=DIR
//     --set backend.timing.compute=NAME-cpu --set backend.timing.memory=NAME-host --set backend.timing.link=NAME-local
// Every number is tagged MEASURED, its source naming the machine, the date and
// the measurement. Each file is validated by loading it back before the
// command reports success. A directory that cannot be written is one line and
// exit 2, before anything is measured.
#include <fmt/format.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "apps/cli/commands.h"
#include "apps/cli/host_calibration.h"
#include "apps/cli/kernel_calibration.h"
#include "apps/cli/link_calibration.h"
#include "backends/timing/presets.h"
#include "framework/core/error.h"

namespace stalelearn::cli {
namespace {

namespace fs = std::filesystem;
using backends::timing::PresetKind;

struct CalibrateOptions {
  std::string out;
  std::string name = "calibrated";
  std::vector<std::string> links = {"local", "ucx-shm", "ucx-tcp"};
  std::vector<std::string> configs;  // apps' configs whose compute step is measured
  bool quick = false;
};

std::string SourcePrefix() {
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::gmtime(&now));
  return fmt::format("stalelearn calibrate on {}, {}", host, date);
}

void WritePreset(const fs::path& dir, PresetKind kind, const google::protobuf::Message& preset,
                 const std::string& name) {
  const fs::path path = ValueOrThrow(backends::timing::PresetPath(dir, kind, name));
  std::string text;
  google::protobuf::TextFormat::PrintToString(preset, &text);
  ThrowIfError(backends::timing::ValidatePreset(preset, path.string()));
  const fs::path temp = path.string() + ".tmp";
  {
    std::ofstream file(temp);
    file << "# Measured by `stalelearn calibrate`: re-run it to refresh; every source says how.\n" << text;
    if (!file) throw Error(InvalidArgument(fmt::format("calibrate: cannot write {}", temp.string())));
  }
  fs::rename(temp, path);
  // Loaded back as a run would load it.
  switch (kind) {
    case PresetKind::kCompute: ValueOrThrow(backends::timing::LoadComputePreset(dir, name)); break;
    case PresetKind::kMemory: ValueOrThrow(backends::timing::LoadMemoryPreset(dir, name)); break;
    case PresetKind::kLink: ValueOrThrow(backends::timing::LoadLinkPreset(dir, name)); break;
  }
}

// The shipped presets, so that DIR also prices the published hardware.
void CopyShippedPresets(const fs::path& dir) {
  const fs::path shipped = backends::timing::DefaultPresetDir();
  for (const PresetKind kind : {PresetKind::kMemory, PresetKind::kLink, PresetKind::kCompute}) {
    const fs::path sub = dir / backends::timing::PresetSubdirectory(kind);
    fs::create_directories(sub);
    for (const std::string& name : backends::timing::ListPresets(shipped, kind)) {
      const fs::path from = ValueOrThrow(backends::timing::PresetPath(shipped, kind, name));
      fs::copy_file(from, sub / from.filename(), fs::copy_options::overwrite_existing);
    }
  }
}

LinkCalibrationSpec LinkSpec(const std::string& link, const CalibrateOptions& options, const std::string& prefix) {
  LinkCalibrationSpec spec;
  spec.preset_name = options.name + "-" + link;
  spec.source_prefix = prefix;
  spec.quick = options.quick;
  if (link == "local") {
    spec.backend = "local";
    spec.description = "ranks as threads of one process (the local backend's copies), measured";
  } else if (link == "ucx-shm") {
    spec.backend = "ucx";
    spec.description = "UCX between two ranks of one node (shared memory), measured";
  } else if (link == "ucx-tcp") {
    spec.backend = "ucx";
    spec.backend_options = {{"tls", "tcp"}};
    spec.description = "UCX over tcp on loopback, measured";
  } else {
    throw Error(InvalidArgument(fmt::format("calibrate: unknown link '{}' (local, ucx-shm, ucx-tcp)", link)));
  }
  return spec;
}

void RunCalibrate(const CalibrateOptions& options) {
  const fs::path dir(options.out);
  const std::string prefix = SourcePrefix();
  std::vector<LinkCalibrationSpec> links;
  for (const std::string& link : options.links) links.push_back(LinkSpec(link, options, prefix));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || access(dir.c_str(), W_OK) != 0) {
    throw Error(InvalidArgument(fmt::format("calibrate: cannot write to --out {}", dir.string())));
  }
  CopyShippedPresets(dir);
  fmt::print(stderr, "calibrate: measuring one core and the merge kernel{}\n", options.quick ? " (quick)" : "");
  const HostCalibration host = MeasureHost({.quick = options.quick});
  const std::string cpu = options.name + "-cpu";
  WritePreset(dir, PresetKind::kCompute, ComputePresetOf(host, cpu, prefix), cpu);
  fmt::print("compute {}: peak {:.1f} GFLOP/s, bandwidth {:.1f} GB/s, line {:.0f} B, latency {:.1f} ns, {:.0f} in flight\n",
             cpu, host.peak_gflops.value, host.bandwidth_gb_per_s.value, host.transaction_bytes.value,
             host.latency_ns.value, host.outstanding.value);
  for (const LinkCalibrationSpec& spec : links) {
    fmt::print(stderr, "calibrate: measuring link {}\n", spec.preset_name);
    const proto::LinkPreset link = ValueOrThrow(CalibrateLink(spec));
    WritePreset(dir, PresetKind::kLink, link, spec.preset_name);
    fmt::print("link {}: latency {:.0f} ns, bandwidth {:.2f} GB/s, per-op overhead {:.0f} ns\n", spec.preset_name,
               link.latency_ns().value(), link.bandwidth_gb_per_s().value(), link.per_op_overhead_ns().value());
  }
  // Each config's step at 1:1, then its data plane at 2:1 (the memory
  // presets take the host path of the first config that measured one).
  const fs::path scratch = dir / ".calibrate-runs";
  fs::create_directories(scratch);
  std::optional<Measured> host_path;
  for (const std::string& config : options.configs) {
    fmt::print(stderr, "calibrate: measuring the compute step and data plane of {}\n", config);
    KernelCalibration kernel = ValueOrThrow(MeasureKernel(config, scratch, options.quick));
    kernel.data_plane = ValueOrThrow(MeasureDataPlane(config, scratch, kernel.epochs, CachedSumBandwidth(host)));
    if (!host_path) host_path = kernel.data_plane->host_path_ns_per_row;
    const std::string name = cpu + "-" + kernel.config_name;
    WritePreset(dir, PresetKind::kCompute, KernelPresetOf(host, kernel, name, prefix), name);
    fmt::print("compute {}: {:.1f} ns per sample, {:.1f} ns per row refreshed; memory host path {:.1f} ns per row\n",
               name, kernel.ns_per_sample.value, kernel.data_plane->ns_per_row_refreshed.value,
               kernel.data_plane->host_path_ns_per_row.value);
  }
  fs::remove_all(scratch);
  for (const MergeCalibration& merge : host.merges) {
    const std::string name = MemoryPresetName(options.name, merge);
    WritePreset(dir, PresetKind::kMemory, MemoryPresetOf(host, merge, host_path, name, prefix), name);
    fmt::print("memory {}: merge '{}' {:.2f} GB/s, atomic {:.1f} ns\n", name, merge.policy,
               merge.bandwidth_gb_per_s.value, host.atomic_rmw_ns.value);
  }
  fmt::print("presets written to {} (backend.timing.preset_dir)\n", dir.string());
}

}  // namespace

void AddCalibrateCommand(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Measure this machine and write timing-backend presets for it");
  cmd->add_option("--out", options->out, "Preset directory to write (created; shipped presets copied in)")->required();
  cmd->add_option("--name", options->name, "Prefix of the written presets' names (default calibrated)")
      ->check([](const std::string& s) {
        return !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") ==
                                 std::string::npos
                   ? std::string()
                   : std::string("letters, digits, '-' and '_' only");
      });
  cmd->add_option("--links", options->links, "Links to measure, comma-separated: local, ucx-shm, ucx-tcp")
      ->delimiter(',');
  cmd->add_option("--config", options->configs,
                  "An app's config whose compute step to measure (repeatable): writes NAME-cpu-<config name>")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--quick", options->quick, "Small buffers and few repetitions (tests; less accurate)");
  cmd->callback([options] { RunCalibrate(*options); });
}

}  // namespace stalelearn::cli
