// The rank's time service: how the runtime charges work, stamps data,
// schedules and idles, whether time is real or simulated. Every rank has one
// (sync::WaitOptions::time, never null), so no caller asks which kind it has:
//
//   RealTime      real backends: time passes by itself. Charges are free,
//                 stamps read the epoch (0), the schedule calls do nothing, a
//                 straggler's delay is slept, collectives just run.
//   virtual time  the timing backend (MakeRankTime): the same calls drive its
//                 SimulatedTime (virtual_time.h): charges advance the rank's
//                 virtual clock, stamps say when data becomes visible, and in
//                 deterministic emulation idle polls wait for another rank's
//                 progress under the virtual-time scheduler.
//
//   std::unique_ptr<RankTime> time = MakeRankTime(transport, bootstrap);  // once per rank
//   time->ConfigureIdling(wait.backoff);
//   ThrowIfError(time->StartSchedule());            // after setup (keys imported)
//   ... per clock on a compute rank:
//   STALELEARN_RETURN_IF_ERROR(time->ChargeCompute({.flops = f, .bytes = b, .random_accesses = r}));
//   header.visible_at_ps = time->PutVisibleAt(batch_bytes, target).time_since_epoch().count();
//   ... on a memory rank, per batch consumed:
//   STALELEARN_RETURN_IF_ERROR(time->AdvanceTo(VirtualTimeFromPs(header.visible_at_ps)));
//   merge ...; STALELEARN_RETURN_IF_ERROR(time->ChargeMerge({bytes, ops}));
//   time->LeaveSchedule();                          // before the final barrier
//
// Thread-safety: RealTime is stateless, one instance serves every rank and
// thread. A virtual RankTime belongs to one rank, as its SimulatedTime does:
// calls that advance time come from one thread at a time (the rank's driver
// thread). Lifetimes: MakeRankTime's result refers to the transport's
// SimulatedTime and to the bootstrap; both must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "framework/core/status.h"
#include "framework/core/wait.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/transport.h"
#include "framework/transport/virtual_time.h"

namespace stalelearn::transport {

// What the report's `simulated` section says of one rank.
struct SimulatedSummary {
  VirtualTime now;
  TimeBreakdown breakdown;
  SimulatedPresets presets;
  bool deterministic = false;
};

// Methods that advance a virtual clock are scheduling points in deterministic
// emulation; they return the scheduler's error (deadlock, timeout) if any.
class RankTime {
 public:
  virtual ~RankTime() = default;

  // ---- Reading the clock (real time: the epoch, 0) ----
  // This rank's clock.
  virtual VirtualTime Now() const = 0;
  // When a Put of `bytes` issued now becomes visible at `target`: the stamp
  // a writer puts in a header (SimulatedTime::PutVisibleAt).
  virtual VirtualTime PutVisibleAt(std::uint64_t bytes, Rank target) const = 0;
  // When data its owner published at `published_at`, fetched with a Get of
  // `bytes`, can have reached this rank (SimulatedTime::GetVisibleAt).
  virtual VirtualTime GetVisibleAt(VirtualTime published_at, std::uint64_t bytes) const = 0;
  // The report's part; none in real time (the report then has no
  // `simulated` section and progress lines no simulated time).
  virtual std::optional<SimulatedSummary> Summary() const = 0;
  // Whether the run can go on when a rank dies (faults.dead_after_seconds):
  // in real time it can; the virtual-time schedule waits for every rank.
  virtual bool survives_rank_loss() const = 0;

  // ---- Charging ----
  // A compute step did `work` in `took` of real time, and a straggler
  // (runtime/straggler.h) makes it last `slowdown` (>= 1) times as long.
  // Virtual: charges `work` scaled by `slowdown` as compute. Real: sleeps
  // (slowdown - 1) * took.
  virtual Status ChargeCompute(const ComputeWork& work, double slowdown, std::chrono::nanoseconds took) = 0;
  Status ChargeCompute(const ComputeWork& work) { return ChargeCompute(work, 1, std::chrono::nanoseconds(0)); }
  // A memory rank merged `work`.
  virtual Status ChargeMerge(const MergeWork& work) = 0;
  // The clock becomes max(clock, t), the difference counted as wait: a
  // reader never uses data before the time it became visible.
  virtual Status AdvanceTo(VirtualTime t) = 0;

  // ---- Scheduling and idling ----
  // Sets how the rank's idle polls wait (Backoff::Policy::on_idle): under the
  // virtual-time scheduler for another rank's progress; otherwise `policy`
  // is left as it is (back off in real time).
  virtual void ConfigureIdling(Backoff::Policy& policy) = 0;
  // The caller's wait cannot end before the `bytes` at `offset` of `region`
  // differ from `seen` (SimulatedTime::WaitOnlyFor); real time: nothing.
  virtual void WaitOnlyFor(const RemoteRegion& region, std::uint64_t offset, const void* seen,
                           std::size_t bytes) = 0;
  // Joins the schedule (once, after setup; blocks until every rank joined).
  virtual Status StartSchedule() = 0;
  // Leave the schedule for a blocking collective and rejoin after it; every
  // rank brackets the same collectives.
  virtual Status ExitForCollective() = 0;
  virtual Status RejoinAfterCollective() = 0;
  // Runs `collective` (blocking, every rank alike) outside the schedule; the
  // clock does not move. Its error is returned as it is (no rejoin then).
  Status OutsideSchedule(const std::function<Status()>& collective);
  // Runs `sum`, an allreduce of `bytes` over every rank of the bootstrap.
  // Virtual: outside the schedule, and every rank then continues at the
  // slowest rank's clock plus the price of a ring allreduce on the link.
  virtual Status AllReduce(std::uint64_t bytes, const std::function<Status()>& sum) = 0;
  // Collective under `key` (bootstrap AllGather): the latest clock over
  // ranks. Call it outside the schedule (before StartSchedule, or between
  // ExitForCollective and RejoinAfterCollective). Real time has no clock to
  // agree on: the epoch, without an exchange.
  virtual Result<VirtualTime> LatestOverRanks(const std::string& key) = 0;
  // Leaves the schedule for good (before the final barrier). Idempotent.
  virtual void LeaveSchedule() = 0;
};

// Real time: see the top of the file. Not final: a test's clock can take
// the rest from it.
class RealTime : public RankTime {
 public:
  // An instance for every rank (stateless): what a WaitOptions holds by default.
  static RealTime& Instance();

  VirtualTime Now() const override { return {}; }
  VirtualTime PutVisibleAt(std::uint64_t, Rank) const override { return {}; }
  VirtualTime GetVisibleAt(VirtualTime, std::uint64_t) const override { return {}; }
  std::optional<SimulatedSummary> Summary() const override { return std::nullopt; }
  bool survives_rank_loss() const override { return true; }
  Status ChargeCompute(const ComputeWork& work, double slowdown, std::chrono::nanoseconds took) override;
  using RankTime::ChargeCompute;
  Status ChargeMerge(const MergeWork&) override { return Status::Ok(); }
  Status AdvanceTo(VirtualTime) override { return Status::Ok(); }
  void ConfigureIdling(Backoff::Policy&) override {}
  void WaitOnlyFor(const RemoteRegion&, std::uint64_t, const void*, std::size_t) override {}
  Status StartSchedule() override { return Status::Ok(); }
  Status ExitForCollective() override { return Status::Ok(); }
  Status RejoinAfterCollective() override { return Status::Ok(); }
  Status AllReduce(std::uint64_t, const std::function<Status()>& sum) override { return sum(); }
  Result<VirtualTime> LatestOverRanks(const std::string&) override { return VirtualTime{}; }
  void LeaveSchedule() override {}
};

// The time service of a rank on `transport`: virtual time over its
// SimulatedTime when it simulates time (the timing backend, also behind
// decorators), else real time. Collectives go through `bootstrap`.
std::unique_ptr<RankTime> MakeRankTime(Transport& transport, Bootstrap& bootstrap);

}  // namespace stalelearn::transport
