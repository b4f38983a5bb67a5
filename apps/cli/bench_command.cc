// `stalelearn bench <app bench>`: the benches a program lists (cli_main.h,
// AppBench; e.g. `bench snn`) parse their own arguments.
//
// `stalelearn bench rma`: one-sided RMA between two ranks, measured the way
// ucx_perftest measures it, so the two can be compared in one run
// (tests/integration/compare_rma_perftest.sh).
//
//   mpirun -np 2 stalelearn bench rma --op put --size 65536 [--iters N] [--json]
//   stalelearn bench rma --op fadd            (no mpirun: 2 ranks as threads)
//
// Rank 0 is the origin, rank 1 the target, which only progresses. The origin
// reuses one source buffer and one remote offset (like ucx_perftest's
// put_bw, so both run in cache), keeps up to --window operations in flight
// and then completes them (puts: one Flush; gets and fetch-adds: waits). It
// verifies what it moved at the end, so a broken transport fails the bench.
// Bandwidth and rate come from the windowed run (MB/s counts 10^6 bytes).
// latency_us is measured on its own afterwards: the median of single
// operations each timed from issue to completion at the target (put+flush,
// get+wait, fetch-add+wait), min(--iters, 1000) of them. The measurement
// itself is rma_measure.h; this file is its command line and output.
#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/cli/commands.h"
#include "apps/cli/rma_measure.h"
#include "framework/core/error.h"
#include "framework/core/log.h"
#include "framework/transport/mpi_bootstrap.h"

namespace stalelearn::cli {
namespace {

struct RmaBenchOptions {
  std::string op = "put";
  std::size_t size = 65536;
  std::uint64_t iters = 10000;
  std::uint64_t warmup = 1000;
  unsigned window = 16;
  std::string backend = "ucx";
  std::vector<std::string> backend_options;  // key=value
  bool registered_buffer = false;
  bool json = false;
};

RmaSpec Resolve(const RmaBenchOptions& options) {
  static const std::map<std::string, RmaOp> kOps = {{"put", RmaOp::kPut}, {"get", RmaOp::kGet}, {"fadd", RmaOp::kFetchAdd}};
  auto op = kOps.find(options.op);
  if (op == kOps.end()) throw Error(InvalidArgument(fmt::format("--op '{}': expected put, get or fadd", options.op)));
  if (options.size == 0) throw Error(InvalidArgument("--size must be at least 1 byte"));
  // Both ranks allocate --size bytes of registered memory; a typo must not exhaust RAM or /dev/shm.
  constexpr std::size_t kMaxSize = std::size_t{1} << 30;
  if (options.size > kMaxSize) {
    throw Error(InvalidArgument(fmt::format("--size {} is above the 1 GiB limit", options.size)));
  }
  if (options.iters == 0 || options.window == 0) throw Error(InvalidArgument("--iters and --window must be positive"));
  RmaSpec spec{op->second, op->second == RmaOp::kFetchAdd ? sizeof(std::uint64_t) : options.size,
               options.iters, options.warmup, options.window, options.backend, {}, options.registered_buffer};
  for (const std::string& pair : options.backend_options) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(InvalidArgument(fmt::format("--backend-option '{}': expected key=value", pair)));
    }
    spec.backend_options[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return spec;
}

void Report(const RmaSpec& spec, const RmaBenchOptions& options, const RmaResult& result) {
  const double mb_per_s = static_cast<double>(spec.size) * static_cast<double>(spec.iters) / result.seconds / 1e6;
  const double mops = static_cast<double>(spec.iters) / result.seconds / 1e6;
  if (options.json) {
    fmt::print(
        "{{\"op\": \"{}\", \"size\": {}, \"iters\": {}, \"window\": {}, \"backend\": \"{}\", "
        "\"registered_buffer\": {}, \"latency_us\": {:.4f}, \"latency_samples\": {}, \"bandwidth_mb_s\": {:.1f}, "
        "\"rate_mops\": {:.4f}, \"seconds\": {:.6f}}}\n",
        options.op, spec.size, spec.iters, spec.window, spec.backend, spec.registered_buffer,
        result.median_latency_us, result.latency_samples, mb_per_s, mops, result.seconds);
  } else {
    fmt::print("rma {} {} B x {} (window {}, backend {}): bandwidth {:.1f} MB/s, {:.3f} Mops/s; latency {:.3f} us "
               "(median of {} {} round trips)\n",
               options.op, spec.size, spec.iters, spec.window, spec.backend, mb_per_s, mops, result.median_latency_us,
               result.latency_samples, RoundTripName(spec.op));
  }
}

void RunRmaBench(const RmaBenchOptions& options) {
  const RmaSpec spec = Resolve(options);
  if (!transport::LaunchedByMpiLauncher()) {
    // Single-node emulation: the two ranks are threads of this process.
    Report(spec, options, ValueOrThrow(MeasureRmaInThreads(spec)));
    return;
  }
  int argc = 0;
  char** argv = nullptr;
  auto session = ValueOrThrow(transport::MpiSession::Start(&argc, &argv));
  try {
    auto bootstrap = ValueOrThrow(transport::MakeMpiBootstrap());
    if (bootstrap->world_size() != 2) {
      throw Error(InvalidArgument(fmt::format("bench rma needs 2 ranks (mpirun -np 2), got {}", bootstrap->world_size())));
    }
    log::SetThreadRank(bootstrap->rank().value);
    auto result = RunRmaRank(*bootstrap, spec);
    if (result) Report(spec, options, *result);
  } catch (const Error& e) {
    // The peer may be waiting in a collective: take the whole job down.
    std::fprintf(stderr, "stalelearn: error: %s\n", e.status().message().c_str());
    transport::MpiSession::Abort(e.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
}

}  // namespace

void AddBenchCommand(CLI::App& app, std::vector<AppBench> app_benches) {
  CLI::App* bench = app.add_subcommand("bench", "Micro-benchmarks of the transport and of the apps");
  bench->require_subcommand(1);
  auto options = std::make_shared<RmaBenchOptions>();
  CLI::App* rma = bench->add_subcommand(
      "rma", "One-sided RMA between 2 ranks: rank 0 issues, rank 1 progresses (mpirun -np 2, or threads)");
  rma->add_option("--op", options->op, "put, get or fadd")->check(CLI::IsMember({"put", "get", "fadd"}));
  rma->add_option("--size", options->size, "bytes per operation (fadd: 8)");
  rma->add_option("--iters", options->iters, "measured operations");
  rma->add_option("--warmup", options->warmup, "operations before measuring");
  rma->add_option("--window", options->window, "operations in flight before completing them");
  rma->add_option("--backend", options->backend, "transport backend");
  rma->add_option("--backend-option", options->backend_options, "backend option key=value, e.g. tls=tcp");
  rma->add_flag("--registered-buffer", options->registered_buffer,
                "origin buffer in registered memory (as ucx_perftest) instead of plain memory");
  rma->add_flag("--json", options->json, "one JSON object on stdout");
  rma->callback([options] { RunRmaBench(*options); });
  // The apps' own benches: each parses its arguments itself.
  for (const AppBench& entry : app_benches) {
    CLI::App* sub = bench->add_subcommand(entry.name, entry.description);
    sub->set_help_flag();  // --help goes to the bench
    sub->allow_extras();
    sub->callback([sub, entry] {
      const char* home = std::getenv("HOME");
      const char* data = std::getenv("STALELEARN_DATA");
      const auto env = [](const char* v) { return v ? std::optional<std::string_view>(v) : std::nullopt; };
      ThrowIfError(entry.run(sub->remaining(), data::ResolveDataDir(env(data), env(home))));
    });
  }
}

}  // namespace stalelearn::cli
