// Prices of the timing backend: pure functions from work to virtual time,
// parameterised by validated presets (presets.h). Every price is rounded to
// whole picoseconds once per component, so sums are exact and runs are
// deterministic.
//
// Formulas (1 GB = 1e9 bytes; element = one 32-bit value, kElementBytes):
//   link    Serialization(B)  = B / bandwidth
//           Transfer(B)       = overhead + latency + Serialization(B)        one put
//           RoundTrip(B)      = overhead + 2 latency + Serialization(B)      one get
//           AllReduce(B, n)   = 2 (n-1) Transfer(ceil(B/n))                  ring allreduce
//   merge of a batch of B bytes and N element updates (master read + written:
//   2 * N * kElementBytes):
//     upmem     D DPUs, per DPU b = ceil(B/D), n = ceil(N/D);
//               read = b + n*4, write = n*4 bytes between MRAM and WRAM in DMAs
//               of at most M bytes:
//               dma = ceil(read/M)*alpha_r + ceil(write/M)*alpha_w + beta*(read+write) cycles
//               pipeline = n * instructions_per_op cycles (one instruction per cycle
//               with >= 11 tasklets; DMA and pipeline overlap)
//               t = launch + B / host_to_dpu_bw + max(dma, pipeline) / clock
//     hmc       P = vaults * banks_per_vault RMWs in flight, each atomic_rmw_ns;
//               t = max(ceil(N/P) * atomic_rmw, (B + 2*N*atomic_request_bytes) / internal_bw)
//     hbm-pim   E = lanes*lane_bytes/4 elements per column; C = ceil(N/E) columns
//               over U units: t = mode_switch + B / host_bw
//                                 + ceil(C/U) * commands_per_column_op * command_spacing
//     dram      t = (B + 2*N*4) / bandwidth + R * host_path_ns_per_row (R row deltas
//               taken from the rings and published; the term only in calibrated presets)
//   atomic at the memory: atomic_rmw_ns (all models)
//   compute of F flops, S bytes, R random row accesses (each one transaction of T bytes):
//           t = max(F / peak, (S + R*T) / bandwidth, R * latency / outstanding)
//   or, with a calibrated kernel (stalelearn calibrate --config), of S samples
//   and R rows a refresh installed:
//           t = S * ns_per_sample + S1 * first_epoch_ns_per_sample + R * ns_per_row_refreshed
//   (S1 of the S samples in the run's first epoch; each term if measured)
//
// Each model is monotone: raising a latency, lowering a bandwidth, a clock, a
// parallelism or a peak never shortens a price, and more work never costs less.
//
// Thread-safety: immutable after construction; share freely.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "framework/core/status.h"
#include "framework/core/wait.h"
#include "framework/proto/timing_presets.pb.h"
#include "framework/transport/virtual_time.h"

namespace stalelearn::backends::timing {

using transport::ComputeWork;
using transport::MergeWork;
using transport::VirtualDuration;
using transport::VirtualTime;

// Bytes of one element of a master table (float or int32).
inline constexpr std::uint64_t kElementBytes = 4;

// Rounds non-negative picoseconds to the nearest whole picosecond.
VirtualDuration Picoseconds(double ps);
VirtualDuration Nanoseconds(double ns);
// Time to move `bytes` at `gb_per_s` (1 GB = 1e9 bytes).
VirtualDuration BytesAt(double bytes, double gb_per_s);

class LinkModel {
 public:
  // `preset` must have passed ValidatePreset.
  explicit LinkModel(const proto::LinkPreset& preset);

  const std::string& name() const { return name_; }
  VirtualDuration overhead() const { return overhead_; }
  VirtualDuration latency() const { return latency_; }
  double gb_per_s() const { return gb_per_s_; }
  VirtualDuration Serialization(std::uint64_t bytes) const { return BytesAt(double(bytes), gb_per_s_); }
  VirtualDuration Transfer(std::uint64_t bytes) const { return overhead_ + latency_ + Serialization(bytes); }
  VirtualDuration RoundTrip(std::uint64_t bytes) const {
    return overhead_ + 2 * latency_ + Serialization(bytes);
  }
  // Ring allreduce of `bytes` over `ranks`: 2 (n - 1) steps, each a transfer
  // of ceil(bytes / n). 0 for one rank.
  VirtualDuration AllReduce(std::uint64_t bytes, int ranks) const;

 private:
  std::string name_;
  VirtualDuration latency_;
  VirtualDuration overhead_;
  double gb_per_s_;
};

class MemoryModel {
 public:
  explicit MemoryModel(const proto::MemoryPreset& preset);

  const std::string& name() const { return name_; }
  VirtualDuration AtomicRmw() const { return atomic_rmw_; }
  VirtualDuration Merge(const MergeWork& work) const;
  // A host core merges (the `dram` model); PIM devices merge in the memory.
  bool merges_on_host_core() const { return preset_.has_dram(); }

 private:
  VirtualDuration MergeUpmem(const proto::UpmemModel& m, const MergeWork& work) const;
  VirtualDuration MergeHmc(const proto::HmcModel& m, const MergeWork& work) const;
  VirtualDuration MergeHbmPim(const proto::HbmPimModel& m, const MergeWork& work) const;
  VirtualDuration MergeDram(const proto::DramModel& m, const MergeWork& work) const;

  std::string name_;
  VirtualDuration atomic_rmw_;
  proto::MemoryPreset preset_;
};

class ComputeModel {
 public:
  explicit ComputeModel(const proto::ComputePreset& preset);

  const std::string& name() const { return name_; }
  VirtualDuration Compute(const ComputeWork& work) const;

  // The preset's idle costs (ComputePreset.idle), if it has them.
  struct IdleCosts {
    VirtualDuration poll;       // one spin round
    VirtualDuration yield;      // one yield round, its poll left out
    VirtualDuration overshoot;  // a sleep's excess over what it asked for
    VirtualDuration handoff{0};  // a thread switch (0: not measured)
  };
  const std::optional<IdleCosts>& idle() const { return idle_; }
  // When a rank idle since `since` under the back-off `policy` polls next at
  // or after `now` (spin rounds of `poll`, yield rounds of `yield + poll`,
  // then sleeps from first_sleep doubling to max_sleep, each `overshoot`
  // longer, plus a poll). Needs idle().
  VirtualTime NextPoll(VirtualTime since, VirtualTime now, const Backoff::Policy& policy) const;

 private:
  std::string name_;
  proto::ComputePreset preset_;
  std::optional<IdleCosts> idle_;
};

// The three models of one run.
struct HardwareModel {
  MemoryModel memory;
  LinkModel link;
  ComputeModel compute;
  // > 0: the ranks are threads sharing this many cores and the scheduler
  // says which are busy: compute and host-core merge work is stretched by
  // max(1, busy ranks / cores) when it is charged (timing_options.h, cores).
  int shared_cores = 0;
};

}  // namespace stalelearn::backends::timing
