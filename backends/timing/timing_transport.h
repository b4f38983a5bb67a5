// The 'timing' backend: a Transport decorator that keeps this rank's virtual
// clock and charges every operation by the link and memory presets, over any
// inner backend (local, ucx). Data moves through the inner backend unchanged;
// only time is simulated.
//
// Charging (L = link latency, O = per-operation overhead, S(B) = B/bandwidth,
// A = memory atomic RMW; one injection queue per rank: a transfer starts when
// the previous one has left, "nic"):
//   Put(B)        clock += O; start = max(clock, nic); nic = start + S(B)
//                 completes locally at nic; visible at target at nic + L;
//                 the origin learns it (Flush) at nic + 2L
//   Get(B)        completes at clock + O + 2L + S(B)           (RoundTrip)
//   AtomicAdd     like Put(8), plus A at the target
//   FetchAdd/CAS  completes at clock + O + 2L + S(8) + A
//   Request::Wait / Test() == true: clock = max(clock, completion)  (transfer)
//   Flush(peer)   clock = max(clock, when the origin learns every earlier
//                 operation to peer completed)                       (transfer)
//   Fence, Progress, Register, Import: free.
// Visibility in virtual time is enforced by stamps (virtual_time.h): the
// writer puts PutVisibleAt(bytes, target) in the batch header, the reader calls
// AdvanceTo(stamp) before using the batch, so its clock never runs behind the
// data it consumes. Under the virtual-time scheduler each clock advance is
// also a scheduling point, so real-time order follows virtual-time order,
// with one allowance for reads: a read-only point (a get issued, a wait for
// a completion) less than one link round trip (2L) after the rank got the
// turn keeps the turn. Gets issued back to back then run as one batch, each
// reading remote memory as it was when the batch began, up to 2L earlier
// than its own issue time: within the window in which a remote write and a
// read are in flight together, so no order of theirs is observable anyway.
// (A refresh of thousands of picked gets otherwise handed the turn over per
// get: at 64:8, each get a thread switch.)
//
// Thread-safety: as the Transport contract (any thread of the rank); the
// clock is guarded by a mutex. Scheduling points of one rank are serialised;
// determinism needs the rank's timed calls to come from one thread.
// Lifetimes: owns the inner transport; Requests must be completed or dropped
// before the TimingTransport is destroyed. The destructor leaves the schedule.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "backends/timing/cost_model.h"
#include "backends/timing/idle_watch.h"
#include "backends/timing/serving_links.h"
#include "backends/timing/virtual_time_scheduler.h"
#include "framework/transport/transport.h"
#include "framework/transport/virtual_time.h"

namespace stalelearn::backends::timing {

using transport::SimulatedPresets;
using transport::TimeBreakdown;
using transport::VirtualDuration;
using transport::VirtualTime;

class TimingTransport final : public transport::Transport,
                              public transport::SimulatedTime {
 public:
  // `scheduler` may be null (no deterministic emulation, e.g. under mpirun).
  TimingTransport(std::unique_ptr<transport::Transport> inner, HardwareModel model,
                  std::shared_ptr<VirtualTimeScheduler> scheduler);
  ~TimingTransport() override;
  TimingTransport(const TimingTransport&) = delete;
  TimingTransport& operator=(const TimingTransport&) = delete;

  const HardwareModel& model() const { return model_; }
  // Gets from now on share the serving rank's link (option shared_ports);
  // before the first operation.
  void ShareServingLinks(std::shared_ptr<ServingLinks> links) { serving_links_ = std::move(links); }
  transport::Transport& inner() { return *inner_; }

  // ---- Transport ----
  transport::Rank rank() const override { return inner_->rank(); }
  int world_size() const override { return inner_->world_size(); }
  // The inner backend's, with the operation cost of the link preset.
  transport::Capabilities capabilities() const override;
  transport::SimulatedTime* simulated_time() override { return this; }
  const char* name() const override { return "timing"; }
  Result<std::unique_ptr<transport::MemoryRegion>> Register(std::size_t bytes, transport::Access access) override;
  Result<std::unique_ptr<transport::RemoteRegion>> Import(transport::Rank owner,
                                                          std::span<const std::byte> key) override;
  Result<transport::RequestPtr> Put(const void* src, std::size_t bytes, const transport::RemoteRegion& dst,
                                    std::uint64_t offset) override;
  Result<transport::RequestPtr> Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                    std::uint64_t offset) override;
  Result<transport::RequestPtr> AtomicAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                          std::uint64_t value) override;
  Result<transport::RequestPtr> FetchAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                         std::uint64_t value, std::uint64_t* old) override;
  Result<transport::RequestPtr> CompareSwap(const transport::RemoteRegion& dst, std::uint64_t offset,
                                            std::uint64_t expected, std::uint64_t desired,
                                            std::uint64_t* old) override;
  Status Fence(transport::Rank peer) override { return inner_->Fence(peer); }
  Status Flush(transport::Rank peer, transport::Timeout timeout) override;
  Status FlushAll(transport::Timeout timeout) override;
  void Progress() override { inner_->Progress(); }
  std::vector<transport::PeerTransports> DescribeEndpoints() const override { return inner_->DescribeEndpoints(); }

  // ---- SimulatedTime ----
  VirtualTime Now() const override;
  TimeBreakdown breakdown() const override;
  SimulatedPresets presets() const override;
  // True once this rank joined the virtual-time schedule (StartSchedule).
  bool deterministic() const override;
  Status ChargeComputeWork(const transport::ComputeWork& work) override;
  Status ChargeMergeWork(const transport::MergeWork& work) override;
  Status AdvanceTo(VirtualTime t) override;
  VirtualTime PutVisibleAt(std::uint64_t bytes, transport::Rank target) const override;
  VirtualTime GetVisibleAt(VirtualTime published_at, std::uint64_t bytes) const override;
  VirtualDuration AllReduceCost(std::uint64_t bytes, int ranks) const override {
    return model_.link.AllReduce(bytes, ranks);
  }
  Status StartSchedule() override;
  Status IdleUntilProgress() override;
  VirtualTime NextPoll(VirtualTime since, const Backoff::Policy& policy) const override;
  // `work` of a core starting now, stretched by how many ranks work on the
  // machine's cores now (HardwareModel::shared_cores), and noted as this
  // rank's; `work` itself without sharing. With more ranks than cores, a
  // thread switch (the compute preset's idle.switch_ns) is added first.
  VirtualDuration OnSharedCore(VirtualDuration work);
  void WaitOnlyFor(const transport::RemoteRegion& region, std::uint64_t offset, const void* seen,
                   std::size_t bytes) override;
  Status ExitScheduleForCollective() override;
  Status RejoinSchedule() override;
  void LeaveSchedule() override;

  // A Request of this transport finished at virtual time `done` (transfer).
  Status CompleteAt(VirtualTime done);

 private:
  // What Import returns: the inner region, shared (timing_transport.cc).
  class TimedRemoteRegion;
  enum class Category { kCompute, kTransfer, kMerge, kWait };

  // Moves the clock to max(clock, t), booking the gap to `category`. Returns
  // whether the clock moved. Takes clock_mutex_.
  bool AdvanceClockTo(VirtualTime t, Category category);
  // Books a one-way transfer of `bytes` issued now (overhead, then the
  // injection queue); returns when it has left this rank. Takes clock_mutex_.
  VirtualTime IssueOneWay(std::uint64_t bytes);
  // When a transfer issued now starts leaving: after the overhead and this
  // rank's earlier transfers (the injection queue). clock_mutex_ held.
  VirtualTime DepartureLocked() const { return std::max(now_ + model_.link.overhead(), nic_free_); }
  // Books an operation that completes at the origin after `cost` (which
  // includes the overhead, charged now); returns the completion time.
  VirtualTime IssueRoundTrip(transport::Rank peer, VirtualDuration cost);
  // A get of `bytes` whose reply leaves over `peer`'s shared link (serving_links.h).
  VirtualTime IssueServedGet(transport::Rank peer, std::uint64_t bytes);
  // A get of `bytes` without shared ports: RoundTrip(bytes) after issue, or
  // later behind the replies already coming in (ArrivedLocked).
  VirtualTime IssueGet(transport::Rank peer, std::uint64_t bytes);
  // When a reply that alone would arrive at `alone` is in, behind the
  // replies to this rank's earlier gets; reserves the link until then.
  VirtualTime ArrivedLocked(VirtualTime alone, std::uint64_t bytes);
  // The issuing of a request to `peer` completing at `done`: the overhead
  // charged, the peer's ack noted. Holds clock_mutex_.
  VirtualTime IssueLocked(transport::Rank peer, VirtualTime done);
  // The origin learns at `acked` that an operation to `peer` completed.
  void NoteAck(transport::Rank peer, VirtualTime acked);
  // Wraps an inner request so that completing it advances the clock to `done`.
  transport::RequestPtr Timed(transport::RequestPtr inner, VirtualTime done);
  // Gives the turn back if scheduled; returns (and keeps) a scheduler failure.
  // kReadOnly after operations that change nothing another rank observes
  // (a get issued, a completion or flush waited for, a stamp waited for).
  Status SchedulingPoint(VirtualTimeScheduler::Effect effect = VirtualTimeScheduler::Effect::kMayWrite);
  // Marks `owner`'s memory as written (put, atomic) or read (get, fetching
  // atomic) since the last scheduling point that reported it (the
  // scheduler's targeted waking). Takes schedule_mutex_.
  void NoteWrote(transport::Rank owner);
  void NoteRead(transport::Rank owner);
  // A completed Get delivered `seen` from `src` (the idle watch; nullptr: a
  // region not imported here, which cannot be watched). Requires
  // schedule_mutex_ and watching_.
  void WatchLocked(const TimedRemoteRegion* src, std::uint64_t offset, std::size_t bytes, const void* seen);
  // This segment read something the watch cannot re-read (an atomic's
  // result). Takes schedule_mutex_.
  void Unwatched();
  // Back to "only my own memory". Requires schedule_mutex_.
  void ResetMemorySetLocked(std::vector<char>& set) const;
  // Keeps the first failure of a call that cannot return it (and logs it).
  void Remember(const Status& status);
  // Keeps `status` as the sticky failure if it is the first; returns it.
  // Requires schedule_mutex_.
  Status KeepLocked(const Status& status);

  std::unique_ptr<transport::Transport> inner_;
  const HardwareModel model_;
  const std::shared_ptr<VirtualTimeScheduler> scheduler_;
  std::shared_ptr<ServingLinks> serving_links_;  // null: each reader has its own path

  mutable std::mutex schedule_mutex_;  // serialises this rank's scheduling points
  bool scheduled_ = false;     // joined and not left; guarded by schedule_mutex_
  bool joined_once_ = false;   // StartSchedule succeeded; guarded by schedule_mutex_
  Status failure_;             // first scheduler failure; guarded by schedule_mutex_
  VirtualTime turn_started_{};  // clock when this rank last got the turn; guarded by schedule_mutex_
  // Per rank, nonzero where this rank may have written its memory since it
  // last reported progress / read it since it last went idle; guarded by
  // schedule_mutex_. Its own memory is always in both.
  std::vector<char> wrote_;
  std::vector<char> read_;
  // What this rank read from others since it last went idle (idle_watch.h);
  // guarded by schedule_mutex_ (and the scheduler's, while this rank idles).
  IdleWatch watch_;
  const bool watching_;  // the inner backend's Gets complete on return

  mutable std::mutex clock_mutex_;  // guards the members below; never held while yielding
  VirtualTime now_{};
  VirtualTime nic_free_{};
  VirtualTime reply_free_{};  // the last reply to this rank's gets is in by then
  TimeBreakdown breakdown_;
  std::vector<VirtualTime> acked_;  // per peer
};

}  // namespace stalelearn::backends::timing
