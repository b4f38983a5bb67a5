// Link calibration from RMA measurements (link_calibration.h).
#include "apps/cli/link_calibration.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "apps/cli/host_calibration.h"
#include "apps/cli/rma_measure.h"
#include "backends/timing/presets.h"

namespace stalelearn::cli {
namespace {

constexpr std::size_t kSmallBytes = 8;
constexpr std::size_t kLargeBytes = std::size_t{1} << 20;  // 1 MiB: bandwidth, not per-op cost, dominates
constexpr unsigned kWindow = 16;
// Below this the overhead ate the whole round trip: L is floored, not 0 (zero is rejected).
constexpr double kMinLatencyNs = 1.0;

// Operations per measurement: {timed, warmup}.
struct Counts {
  std::uint64_t iters;
  std::uint64_t warmup;
};
struct Plan {
  Counts overhead;   // 8-B puts
  Counts latency;    // 8-B gets; iters round trips are timed (<= kMaxRmaLatencySamples)
  Counts bandwidth;  // 1-MiB puts
};
// Full: ~1 GiB moved for the bandwidth (about 1 s over tcp). Quick: < 3 s per
// link on any transport here, for the tests.
constexpr Plan kFullPlan{{100000, 10000}, {kMaxRmaLatencySamples, 1000}, {1000, 100}};
constexpr Plan kQuickPlan{{2000, 200}, {200, 50}, {64, 8}};

// "link 'calibrated-ucx-tcp' (backend ucx, tls=tcp)": how errors name the link.
std::string LinkName(const LinkCalibrationSpec& spec) {
  std::string options;
  for (const auto& [key, value] : spec.backend_options) options += fmt::format(", {}={}", key, value);
  return fmt::format("link '{}' (backend {}{})", spec.preset_name, spec.backend, options);
}

// The `stalelearn bench rma` command that measures what `rma` measures.
std::string BenchCommand(const RmaSpec& rma) {
  std::string command = fmt::format("stalelearn bench rma --op {} --size {} --iters {} --warmup {} --window {} --backend {}",
                                    rma.op == RmaOp::kPut ? "put" : "get", rma.size, rma.iters, rma.warmup,
                                    rma.window, rma.backend);
  for (const auto& [key, value] : rma.backend_options) command += fmt::format(" --backend-option {}={}", key, value);
  return command;
}

RmaSpec MakeRma(const LinkCalibrationSpec& spec, RmaOp op, std::size_t size, Counts counts, bool want_latency) {
  RmaSpec rma;
  rma.op = op;
  rma.size = size;
  rma.iters = counts.iters;
  rma.warmup = counts.warmup;
  rma.window = kWindow;
  rma.backend = spec.backend;
  rma.backend_options = spec.backend_options;
  rma.max_latency_samples = want_latency ? kMaxRmaLatencySamples : 0;  // 1-MiB round trips would only cost time
  return rma;
}

}  // namespace

Result<proto::LinkPreset> CalibrateLink(const LinkCalibrationSpec& spec) {
  const std::string link = LinkName(spec);
  STALELEARN_ASSIGN_OR_RETURN(
      const auto path, backends::timing::PresetPath("", backends::timing::PresetKind::kLink, spec.preset_name));
  const Plan& plan = spec.quick ? kQuickPlan : kFullPlan;
  const auto measure = [&](const RmaSpec& rma, const char* quantity) -> Result<RmaResult> {
    Result<RmaResult> result = MeasureRmaInThreads(rma);
    if (!result.ok()) return result.status().WithContext(fmt::format("calibrating {}, {}", link, quantity));
    return result;
  };
  const auto bad = [&](const char* quantity, double value) {
    return Internal(fmt::format("calibrating {}: {} measured as {}, expected a finite value > 0", link, quantity, value));
  };

  const RmaSpec small_puts = MakeRma(spec, RmaOp::kPut, kSmallBytes, plan.overhead, false);
  STALELEARN_ASSIGN_OR_RETURN(const RmaResult puts, measure(small_puts, "per_op_overhead_ns"));
  const double overhead_ns = puts.seconds / static_cast<double>(small_puts.iters) * 1e9;
  if (!std::isfinite(overhead_ns) || overhead_ns < 0) return bad("per_op_overhead_ns", overhead_ns);

  const RmaSpec small_gets = MakeRma(spec, RmaOp::kGet, kSmallBytes, plan.latency, true);
  STALELEARN_ASSIGN_OR_RETURN(const RmaResult gets, measure(small_gets, "latency_ns"));
  const double round_trip_ns = gets.median_latency_us * 1e3;
  if (!std::isfinite(round_trip_ns) || round_trip_ns <= 0) return bad("latency_ns (get round trip)", round_trip_ns);
  const double halved_ns = (round_trip_ns - overhead_ns) / 2;
  const bool floored = halved_ns < kMinLatencyNs;
  const double latency_ns = floored ? kMinLatencyNs : halved_ns;

  const RmaSpec large_puts = MakeRma(spec, RmaOp::kPut, kLargeBytes, plan.bandwidth, false);
  STALELEARN_ASSIGN_OR_RETURN(const RmaResult bulk, measure(large_puts, "bandwidth_gb_per_s"));
  const double gb_per_s = static_cast<double>(kLargeBytes) * static_cast<double>(large_puts.iters) / bulk.seconds / 1e9;
  if (!std::isfinite(gb_per_s) || gb_per_s <= 0) return bad("bandwidth_gb_per_s", gb_per_s);

  proto::LinkPreset preset;
  preset.set_name(spec.preset_name);
  preset.set_description(spec.description);
  *preset.mutable_per_op_overhead_ns() = QuantityOf(
      {overhead_ns, fmt::format("origin time per operation of a windowed run of {} {}-B puts, window {}, each "
                                "window flushed ({}): seconds / {}",
                                small_puts.iters, kSmallBytes, kWindow, BenchCommand(small_puts), small_puts.iters)},
      spec.source_prefix);
  *preset.mutable_latency_ns() = QuantityOf(
      {latency_ns,
       fmt::format("median of {} single {}-B get round trips ({}), minus the overhead, halved{}", gets.latency_samples,
                   kSmallBytes, BenchCommand(small_gets),
                   floored ? fmt::format("; floored at {} ns: the round trip ({:.4g} ns) was not above the overhead",
                                         kMinLatencyNs, round_trip_ns)
                           : std::string())},
      spec.source_prefix);
  *preset.mutable_bandwidth_gb_per_s() = QuantityOf(
      {gb_per_s, fmt::format("windowed put bandwidth of {} {}-B (1 MiB) puts, window {}, each window flushed "
                             "({}), 1 GB = 1e9 B",
                             large_puts.iters, kLargeBytes, kWindow, BenchCommand(large_puts))},
      spec.source_prefix);
  // Rounding to 4 digits cannot make a value 0 here, but the loader's rules are the contract.
  STALELEARN_RETURN_IF_ERROR(backends::timing::ValidatePreset(preset, path.string())
                                 .WithContext(fmt::format("calibrating {}", link)));
  return preset;
}

}  // namespace stalelearn::cli
