// The RMA measurement of `stalelearn bench rma` and of the link calibration
// (rma_measure.h).
#include "apps/cli/rma_measure.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "backends/builtin.h"
#include "framework/core/error.h"
#include "framework/core/wait.h"
#include "framework/transport/inprocess_bootstrap.h"

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

std::vector<std::byte> Pattern(std::size_t n) {
  std::vector<std::byte> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<std::byte>((i * 7 + 1) & 0xff);
  return bytes;
}

// Issues `count` operations in windows; each window is completed before the
// next starts. Only the origin's transport is used.
class OriginLoop {
 public:
  OriginLoop(Transport& t, const RmaSpec& spec, const transport::RemoteRegion& remote)
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
  // at the target; returns the median in microseconds (0 for no samples).
  double MedianRoundTripUs(std::uint64_t samples) {
    if (samples == 0) return 0;
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
  const RmaSpec& spec_;
  const transport::RemoteRegion& remote_;
  // One source (put) or destination (get), reused: plain memory as apps use,
  // or (registered_buffer) registered memory as ucx_perftest uses, which
  // makes UCX prefer zero-copy (CMA on one node) over copying.
  std::unique_ptr<transport::MemoryRegion> local_;
  std::vector<std::byte> plain_;
  std::span<std::byte> buffer_;
  std::vector<std::uint64_t> replies_;   // fetch-add results, one per window slot
  std::vector<transport::RequestPtr> window_;
};

}  // namespace

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

std::optional<RmaResult> RunRmaRank(Bootstrap& bootstrap, const RmaSpec& spec) {
  const auto& registry = backends::BuiltinRegistry();
  auto t = ValueOrThrow(
      registry.Create(spec.backend, transport::BackendContext{bootstrap, spec.backend_options, registry}));
  // `data` is what the origin reads or writes; `control` carries "done".
  auto data = ValueOrThrow(t->Register(std::max<std::size_t>(spec.size, 64), Access::kAll));
  auto control = ValueOrThrow(t->Register(64, Access::kAll));
  if (spec.op == RmaOp::kGet) std::memcpy(data->data(), Pattern(spec.size).data(), spec.size);
  auto data_keys = ValueOrThrow(bootstrap.AllGather("bench.data", data->key()));
  auto control_keys = ValueOrThrow(bootstrap.AllGather("bench.control", control->key()));

  std::optional<RmaResult> result;
  if (t->rank() == kOrigin) {
    auto remote = ValueOrThrow(t->Import(kTarget, data_keys[kTarget.value]));
    auto remote_control = ValueOrThrow(t->Import(kTarget, control_keys[kTarget.value]));
    OriginLoop loop(*t, spec, *remote);
    loop.Run(spec.warmup);
    const auto start = Clock::now();
    loop.Run(spec.iters);
    result = RmaResult{std::chrono::duration<double>(Clock::now() - start).count()};
    result->latency_samples = std::min(spec.iters, spec.max_latency_samples);
    result->median_latency_us = loop.MedianRoundTripUs(result->latency_samples);
    ThrowIfError(loop.Verify(spec.warmup + spec.iters + result->latency_samples));
    ThrowIfError(FetchAddBlocking(*t, *remote_control, 0, 1, kOpTimeout).status());
  } else if (t->rank() == kTarget) {
    // The target only progresses (deploy/README.md: tcp and large puts need
    // it) and never backs off: a yield or a sleep would add to the latency
    // the origin measures.
    const WaitSpec spec{.timeout = kTargetDeadline, .backoff = {.spins = std::numeric_limits<std::int64_t>::max()}};
    const auto waited = WaitFor(spec, [&] { return transport::LoadAcquire64(control->data()) != 0; },
                                [&] { t->Progress(); });
    if (!waited.ok()) throw Error(TimeoutError("bench target: the origin never finished"));  // kTimeout, the only error
  }
  ThrowIfError(bootstrap.Barrier());
  return result;
}

Result<RmaResult> MeasureRmaInThreads(const RmaSpec& spec) {
  // Both ranks allocate `size` bytes of registered memory: a typo must not exhaust RAM or /dev/shm.
  constexpr std::size_t kMaxSize = std::size_t{1} << 30;
  if (spec.size == 0 || spec.size > kMaxSize) {
    return InvalidArgument(fmt::format("rma measurement: size {} is outside 1 B .. 1 GiB", spec.size));
  }
  if (spec.op == RmaOp::kFetchAdd && spec.size != sizeof(std::uint64_t)) {
    return InvalidArgument(fmt::format("rma measurement: a fetch-add moves 8 bytes, not {}", spec.size));
  }
  if (spec.iters == 0 || spec.window == 0) return InvalidArgument("rma measurement: iters and window must be positive");
  std::optional<RmaResult> result;
  try {
    transport::RunRanks(2, [&](Bootstrap& bootstrap) {
      // Only the origin's thread writes `result`; RunRanks joins before it is read.
      auto mine = RunRmaRank(bootstrap, spec);
      if (mine) result = mine;
    });
  } catch (const Error& e) {
    return e.status().ok() ? Internal(e.what()) : e.status();
  } catch (const std::exception& e) {
    return Internal(e.what());
  }
  if (!result) return Internal("rma measurement: the origin returned no result");
  return *result;
}

}  // namespace stalelearn::cli
