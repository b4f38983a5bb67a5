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
// get+wait, fetch-add+wait), min(--iters, 1000) of them.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apps/cli/commands.h"
#include "backends/builtin.h"
#include "framework/core/error.h"
#include "framework/core/log.h"
#include "framework/transport/inprocess_bootstrap.h"
#include "framework/transport/mpi_bootstrap.h"

namespace stalelearn::cli {
namespace {

using transport::Access;
using transport::Bootstrap;
using transport::Rank;
using transport::Transport;
using Clock = std::chrono::steady_clock;

constexpr std::chrono::seconds kOpTimeout{60};
// The target serves the origin at most this long (a hang becomes an error).
constexpr std::chrono::minutes kTargetDeadline{10};
constexpr Rank kOrigin{0};
constexpr Rank kTarget{1};

enum class RmaOp { kPut, kGet, kFetchAdd };

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

struct RmaBenchSpec {
  RmaOp op;
  std::size_t size;  // bytes per operation (8 for fadd)
  std::uint64_t iters;
  std::uint64_t warmup;
  unsigned window;
  std::string backend;
  std::map<std::string, std::string> backend_options;
  bool registered_buffer;
};

struct RmaBenchResult {
  double seconds = 0;             // the windowed run of spec.iters operations
  double median_latency_us = 0;   // of latency_samples single round trips
  std::uint64_t latency_samples = 0;
};

constexpr std::uint64_t kMaxLatencySamples = 1000;

RmaBenchSpec Resolve(const RmaBenchOptions& options) {
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
  RmaBenchSpec spec{op->second, op->second == RmaOp::kFetchAdd ? sizeof(std::uint64_t) : options.size,
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

std::vector<std::byte> Pattern(std::size_t n) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>((i * 7 + 1) & 0xff);
  return bytes;
}

// Issues `count` operations in windows; each window is completed before the
// next starts. Only the origin's transport is used.
class OriginLoop {
 public:
  OriginLoop(Transport& t, const RmaBenchSpec& spec, const transport::RemoteRegion& remote)
      : t_(t),
        spec_(spec),
        remote_(remote),
        local_(spec.registered_buffer ? ValueOrThrow(t.Register(spec.size, Access::kLocal)) : nullptr),
        plain_(spec.registered_buffer ? 0 : spec.size),
        buffer_(local_ ? local_->data() : plain_.data(), spec.size),
        replies_(spec.window),
        window_(spec.window) {
    const auto pattern = Pattern(spec.size);
    std::memcpy(buffer_.data(), pattern.data(), spec.size);
  }

  void Run(std::uint64_t count) {
    for (std::uint64_t done = 0; done < count;) {
      const auto batch = static_cast<unsigned>(std::min<std::uint64_t>(spec_.window, count - done));
      for (unsigned i = 0; i < batch; ++i) window_[i] = ValueOrThrow(Issue(i));
      if (spec_.op == RmaOp::kPut) {
        // Put completion is local; Flush completes the whole window remotely.
        ThrowIfError(t_.Flush(kTarget, kOpTimeout));
      } else {
        for (unsigned i = 0; i < batch; ++i) ThrowIfError(window_[i]->Wait(kOpTimeout));
      }
      done += batch;
    }
  }

  // Times `samples` single operations, each from issue until it is complete
  // at the target; returns the median in microseconds.
  double MedianRoundTripUs(std::uint64_t samples) {
    std::vector<double> us;
    us.reserve(samples);
    for (std::uint64_t i = 0; i < samples; ++i) {
      const auto start = Clock::now();
      transport::RequestPtr request = ValueOrThrow(Issue(0));
      if (spec_.op == RmaOp::kPut) {
        ThrowIfError(t_.Flush(kTarget, kOpTimeout));  // put completion alone is local
      } else {
        ThrowIfError(request->Wait(kOpTimeout));
      }
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2), us.end());
    return us[us.size() / 2];
  }

  // Checks what the run moved; kDataLoss if the transport lost or bent it.
  Status Verify(std::uint64_t total_ops) {
    switch (spec_.op) {
      case RmaOp::kPut: {
        std::vector<std::byte> back(spec_.size);
        STALELEARN_RETURN_IF_ERROR(GetBlocking(t_, back.data(), back.size(), remote_, 0, kOpTimeout));
        if (back != Pattern(spec_.size)) return DataLoss("bench put: the target holds other bytes than were put");
        return Status::Ok();
      }
      case RmaOp::kGet:
        if (!std::ranges::equal(buffer_, Pattern(spec_.size))) return DataLoss("bench get: got other bytes than the target holds");
        return Status::Ok();
      case RmaOp::kFetchAdd: {
        std::uint64_t counter = 0;
        STALELEARN_RETURN_IF_ERROR(GetBlocking(t_, &counter, sizeof counter, remote_, 0, kOpTimeout));
        if (counter != total_ops) {
          return DataLoss(fmt::format("bench fadd: counter is {} after {} fetch-adds", counter, total_ops));
        }
        return Status::Ok();
      }
    }
    return Internal("bench: unknown op");
  }

 private:
  Result<transport::RequestPtr> Issue(unsigned slot) {
    switch (spec_.op) {
      case RmaOp::kPut:
        return t_.Put(buffer_.data(), buffer_.size(), remote_, 0);
      case RmaOp::kGet:
        return t_.Get(buffer_.data(), buffer_.size(), remote_, 0);
      case RmaOp::kFetchAdd:
        return t_.FetchAdd(remote_, 0, 1, &replies_[slot]);
    }
    return Internal("bench: unknown op");
  }

  Transport& t_;
  const RmaBenchSpec& spec_;
  const transport::RemoteRegion& remote_;
  // One source (put) or destination (get), reused: plain memory as apps use,
  // or (--registered-buffer) registered memory as ucx_perftest uses, which
  // makes UCX prefer zero-copy (CMA on one node) over copying.
  std::unique_ptr<transport::MemoryRegion> local_;
  std::vector<std::byte> plain_;
  std::span<std::byte> buffer_;
  std::vector<std::uint64_t> replies_;   // fetch-add results, one per window slot
  std::vector<transport::RequestPtr> window_;
};

// One rank of the benchmark. Returns the measurement on the origin.
std::optional<RmaBenchResult> RunRank(Bootstrap& bootstrap, const RmaBenchSpec& spec) {
  const auto& registry = backends::BuiltinRegistry();
  auto t = ValueOrThrow(
      registry.Create(spec.backend, transport::BackendContext{bootstrap, spec.backend_options, registry}));
  // `data` is what the origin reads or writes; `control` carries "done".
  auto data = ValueOrThrow(t->Register(std::max<std::size_t>(spec.size, 64), Access::kAll));
  auto control = ValueOrThrow(t->Register(64, Access::kAll));
  if (spec.op == RmaOp::kGet) std::memcpy(data->data(), Pattern(spec.size).data(), spec.size);
  auto data_keys = ValueOrThrow(bootstrap.AllGather("bench.data", data->key()));
  auto control_keys = ValueOrThrow(bootstrap.AllGather("bench.control", control->key()));

  std::optional<RmaBenchResult> result;
  if (t->rank() == kOrigin) {
    auto remote = ValueOrThrow(t->Import(kTarget, data_keys[kTarget.value]));
    auto remote_control = ValueOrThrow(t->Import(kTarget, control_keys[kTarget.value]));
    OriginLoop loop(*t, spec, *remote);
    loop.Run(spec.warmup);
    const auto start = Clock::now();
    loop.Run(spec.iters);
    result = RmaBenchResult{std::chrono::duration<double>(Clock::now() - start).count()};
    result->latency_samples = std::min(spec.iters, kMaxLatencySamples);
    result->median_latency_us = loop.MedianRoundTripUs(result->latency_samples);
    ThrowIfError(loop.Verify(spec.warmup + spec.iters + result->latency_samples));
    ThrowIfError(FetchAddBlocking(*t, *remote_control, 0, 1, kOpTimeout).status());
  } else if (t->rank() == kTarget) {
    // The target only progresses (deploy/README.md: tcp and large puts need it).
    const auto deadline = Clock::now() + kTargetDeadline;
    while (transport::LoadAcquire64(control->data()) == 0) {
      t->Progress();
      if (Clock::now() > deadline) throw Error(TimeoutError("bench target: the origin never finished"));
    }
  }
  ThrowIfError(bootstrap.Barrier());
  return result;
}

const char* RoundTripName(RmaOp op) {
  switch (op) {
    case RmaOp::kPut:
      return "put+flush";
    case RmaOp::kGet:
      return "get";
    case RmaOp::kFetchAdd:
      return "fetch-add";
  }
  return "op";
}

void Report(const RmaBenchSpec& spec, const RmaBenchOptions& options, const RmaBenchResult& result) {
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
  const RmaBenchSpec spec = Resolve(options);
  if (!transport::LaunchedByMpiLauncher()) {
    // Single-node emulation: the two ranks are threads of this process.
    std::optional<RmaBenchResult> result;
    transport::RunRanks(2, [&](Bootstrap& bootstrap) {
      auto mine = RunRank(bootstrap, spec);
      if (mine) result = mine;
    });
    Report(spec, options, result.value());
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
    auto result = RunRank(*bootstrap, spec);
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
