// Simulated (virtual) time: what the hardware-timing backend
// (backends/timing) offers the training runtime, and the time types both use.
// The backend's Transport also implements SimulatedTime; every other backend
// does not, and FindSimulatedTime returns nullptr for it. The runtime does
// not call this interface itself: the rank's time service (rank_time.h,
// MakeRankTime) wraps it, and stands in with real time where there is none,
// so callers never test for it:
//
//   SimulatedTime& sim = *FindSimulatedTime(transport);  // inside MakeRankTime
//   ThrowIfError(sim.StartSchedule());                  // after setup (keys imported)
//   ... per clock on a compute rank:
//   STALELEARN_RETURN_IF_ERROR(sim.ChargeComputeWork({.flops = f, .bytes = b, .random_accesses = r}));
//   header.visible_at_ps = sim.PutVisibleAt(batch_bytes, target).time_since_epoch().count();
//   ... on a memory rank, per batch consumed:
//   STALELEARN_RETURN_IF_ERROR(sim.AdvanceTo(VirtualTimeFromPs(header.visible_at_ps)));
//   merge ...; STALELEARN_RETURN_IF_ERROR(sim.ChargeMergeWork({bytes, ops}));
//   ... polling that found nothing new:
//   STALELEARN_RETURN_IF_ERROR(sim.IdleUntilProgress());
//   sim.LeaveSchedule();                                // before the final barrier
//
// Times are integer picoseconds (deterministic arithmetic, no rounding drift).
// Thread-safety: a SimulatedTime belongs to one rank; its methods may be called
// from any thread of that rank, but in deterministic emulation the calls that
// advance time must come from one thread at a time (the rank's driver thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "framework/core/wait.h"
#include "framework/transport/transport.h"

namespace stalelearn::transport {

// A clock type for std::chrono: integer picoseconds since the start of the run.
struct VirtualClock {
  using rep = std::int64_t;
  using period = std::pico;
  using duration = std::chrono::duration<rep, period>;
  using time_point = std::chrono::time_point<VirtualClock, duration>;
  static constexpr bool is_steady = true;
};
using VirtualDuration = VirtualClock::duration;
using VirtualTime = VirtualClock::time_point;

inline constexpr VirtualTime VirtualTimeFromPs(std::int64_t ps) { return VirtualTime(VirtualDuration(ps)); }
inline constexpr double ToSeconds(VirtualDuration d) { return static_cast<double>(d.count()) * 1e-12; }

// Work of one compute step as the app kernels count it (mirrors the runtime's
// WorkCounters): floating-point operations, bytes streamed, and random
// (divergent) row accesses, each of which pays a separate memory transaction.
struct ComputeWork {
  double flops = 0;
  double bytes = 0;
  double random_accesses = 0;
  double samples = 0;  // priced only by a calibrated kernel (timing_presets.proto KernelCost)
  // Of `samples`, those of the run's first epoch: a calibrated kernel's
  // first_epoch_ns_per_sample prices their warm-up on top.
  double first_epoch_samples = 0;
  // Rows a refresh installed into the replica (planning, copying, replaying
  // own deltas): priced only by a calibrated kernel's ns_per_row_refreshed.
  double rows_refreshed = 0;
};

// One batch merged on a memory rank: bytes of the batch (header, indices,
// values) and element updates (32-bit adds into the master).
struct MergeWork {
  std::uint64_t bytes = 0;
  std::uint64_t ops = 0;
  // Row deltas a host memory rank took from its rings and published (the
  // data plane around the merge: decode, change marks, snapshot records):
  // priced only by a `dram` model's host_path_ns_per_row.
  std::uint64_t rows = 0;
};

// Where a rank's virtual time went. compute + transfer + merge + wait equals
// the rank's clock.
struct TimeBreakdown {
  VirtualDuration compute{0};
  VirtualDuration transfer{0};  // issuing operations, waiting for their completion
  VirtualDuration merge{0};
  VirtualDuration wait{0};      // stalls: waiting for data or for peers
  VirtualDuration total() const { return compute + transfer + merge + wait; }
};

// Names of the presets a run is priced with (for the report).
struct SimulatedPresets {
  std::string memory;
  std::string link;
  std::string compute;
};

// Methods that advance the clock are scheduling points in deterministic
// emulation; they return the scheduler's error (deadlock, timeout) if any.
class SimulatedTime {
 public:
  virtual ~SimulatedTime() = default;

  // This rank's virtual clock.
  virtual VirtualTime Now() const = 0;
  virtual TimeBreakdown breakdown() const = 0;
  virtual SimulatedPresets presets() const = 0;
  // True when ranks run under the virtual-time scheduler (same timeline on
  // every run); false e.g. under mpirun.
  virtual bool deterministic() const = 0;

  // Advance the clock by the compute preset's price of `work` (compute).
  virtual Status ChargeComputeWork(const ComputeWork& work) = 0;
  // Advance the clock by the memory preset's price of merging `work` (merge).
  virtual Status ChargeMergeWork(const MergeWork& work) = 0;
  // The clock becomes max(clock, t); the difference counts as wait. A reader
  // calls it with the stamp of data it consumes, so that it never uses data
  // before the virtual time the data became visible.
  virtual Status AdvanceTo(VirtualTime t) = 0;

  // Stamp for a header: the virtual time at which a Put of `bytes` issued now
  // by this rank becomes visible at `target` (clock + overhead + queueing
  // behind earlier transfers + latency + bytes / bandwidth, and where links
  // are shared, behind what is queued at the target's port). Does not
  // advance the clock.
  virtual VirtualTime PutVisibleAt(std::uint64_t bytes, Rank target) const = 0;
  // When data published by its owner at `published_at` and fetched with a Get
  // of `bytes` can have reached this rank: published_at + latency + bytes /
  // bandwidth. Pass the result to AdvanceTo after the Get.
  virtual VirtualTime GetVisibleAt(VirtualTime published_at, std::uint64_t bytes) const = 0;

  // Price of an allreduce of `bytes` over `ranks` on the link (ring
  // algorithm). The ALLREDUCE mode, after the collective:
  //   AdvanceTo(max over ranks of Now() + AllReduceCost(bytes, ranks)).
  virtual VirtualDuration AllReduceCost(std::uint64_t bytes, int ranks) const = 0;

  // Deterministic emulation (ranks as threads over an in-process backend):
  // joins the virtual-time schedule; blocks until every rank has joined. From
  // then on each call that advances the clock (the charges above, AdvanceTo,
  // and every transport operation) is a scheduling point: it returns only when
  // this rank has the smallest (time, rank) of the runnable ranks. Without a
  // scheduler (e.g. under mpirun) these calls only keep the clock.
  virtual Status StartSchedule() = 0;
  // A poll found nothing new: blocks until another rank made progress; the
  // clock may jump to when that happened (counted as wait). Without a
  // scheduler: yields the thread.
  virtual Status IdleUntilProgress() = 0;
  // When a rank idle since `since` (its wait's first poll found nothing)
  // polls next at or after Now(), if the backend prices the back-off's
  // polls (`policy`: core/wait.h; the compute preset's idle costs: a wake
  // waits for the next spin round, yield or end of a sleep); Now() if not.
  virtual VirtualTime NextPoll(VirtualTime since, const Backoff::Policy& policy) const {
    (void)since;
    (void)policy;
    return Now();
  }
  // A poll found that its wait cannot end before the `bytes` at `offset` of
  // `region` differ from `seen` (what it read there): e.g. a staleness gate
  // blocked by one rank's merged clock. The next IdleUntilProgress then
  // sleeps until a segment changes them or writes this rank's own memory,
  // instead of waking for every change to the rest of what the poll read
  // (backends/timing/idle_watch.h). Without a scheduler: nothing.
  virtual void WaitOnlyFor(const RemoteRegion& region, std::uint64_t offset, const void* seen, std::size_t bytes) = 0;
  // Leaves the schedule for a blocking collective (e.g. the ALLREDUCE mode's
  // allreduce) and rejoins after it. Every rank must bracket the same
  // collectives; after Rejoin the caller sets the clock with AdvanceTo (e.g.
  // to the maximum over ranks plus the collective's cost).
  virtual Status ExitScheduleForCollective() = 0;
  virtual Status RejoinSchedule() = 0;
  // Leaves the schedule for good (before the final barrier). Idempotent; the
  // transport's destructor calls it too.
  virtual void LeaveSchedule() = 0;
};

// The SimulatedTime behind `transport`, or nullptr if it is not timed (the
// runtime asks through MakeRankTime, rank_time.h).
inline SimulatedTime* FindSimulatedTime(Transport& transport) { return transport.simulated_time(); }

}  // namespace stalelearn::transport
