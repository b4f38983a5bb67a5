// One-sided RMA between two ranks, measured the way ucx_perftest measures it:
// the core of `stalelearn bench rma` (bench_command.cc, which adds the command
// line, the output and the mpirun path) and of the link calibration
// (link_calibration.h).
//
//   RmaSpec spec{.op = RmaOp::kPut, .size = 8, .iters = 10000, .backend = "ucx"};
//   Result<RmaResult> r = MeasureRmaInThreads(spec);   // 2 ranks as threads
//   // r->seconds / spec.iters: the origin's time per operation
//
// Rank 0 is the origin, rank 1 the target, which only progresses. The origin
// reuses one source buffer and one remote offset (like ucx_perftest's put_bw,
// so both run in cache), keeps up to `window` operations in flight and then
// completes them (puts: one Flush; gets and fetch-adds: waits). It verifies
// what it moved at the end, so a broken transport fails the measurement.
// The median round trip is measured on its own afterwards: single operations
// each timed from issue to completion at the target (put+flush, get+wait,
// fetch-add+wait).
//
// Thread-safety: free functions without shared state; RunRmaRank follows the
// Bootstrap rules (the calling rank's thread only). Lifetimes: `spec` must
// outlive the call; the transport lives only inside the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "framework/core/status.h"
#include "framework/transport/bootstrap.h"

namespace stalelearn::cli {

enum class RmaOp { kPut, kGet, kFetchAdd };

// At most this many single round trips are timed for the median.
inline constexpr std::uint64_t kMaxRmaLatencySamples = 1000;

struct RmaSpec {
  RmaOp op = RmaOp::kPut;
  std::size_t size = 65536;  // bytes per operation (must be 8 for kFetchAdd)
  std::uint64_t iters = 10000;  // operations of the timed windowed run
  std::uint64_t warmup = 1000;  // untimed operations before it
  unsigned window = 16;         // operations in flight before completing them
  std::string backend = "ucx";
  std::map<std::string, std::string> backend_options;  // empty: backend defaults
  // Origin buffer in registered memory (as ucx_perftest) instead of plain
  // memory as apps use; makes UCX prefer zero-copy over copying.
  bool registered_buffer = false;
  // Round trips timed: min(iters, max_latency_samples); 0 skips them (a
  // bandwidth-only run of large operations).
  std::uint64_t max_latency_samples = kMaxRmaLatencySamples;
};

struct RmaResult {
  double seconds = 0;            // the windowed run of spec.iters operations
  double median_latency_us = 0;  // of latency_samples single round trips (0 if none)
  std::uint64_t latency_samples = 0;
};

// "put+flush", "get" or "fetch-add": what one timed round trip is.
const char* RoundTripName(RmaOp op);

// Runs one rank of the measurement on `bootstrap` (2 ranks: origin and
// target). Returns the measurement on the origin, nullopt on the target.
// Throws stalelearn::Error on any failure (the peer's collectives then fail
// fast); kDataLoss if the transport moved other bytes than it was given.
std::optional<RmaResult> RunRmaRank(transport::Bootstrap& bootstrap, const RmaSpec& spec);

// Runs both ranks as threads of this process (transport::RunRanks) and
// returns the origin's measurement; every failure, thrown or not, as a Status
// (kInvalidArgument for a spec out of range: size 0 or above 1 GiB, fetch-add
// size other than 8, iters or window 0).
Result<RmaResult> MeasureRmaInThreads(const RmaSpec& spec);

}  // namespace stalelearn::cli
