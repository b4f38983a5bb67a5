#include "framework/transport/rank_time.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <thread>
#include <vector>

namespace stalelearn::transport {
namespace {

// Virtual time: the runtime's calls on the timing backend's SimulatedTime.
class VirtualRankTime final : public RankTime {
 public:
  VirtualRankTime(SimulatedTime& sim, Bootstrap& bootstrap) : sim_(sim), bootstrap_(bootstrap) {}

  VirtualTime Now() const override { return sim_.Now(); }
  VirtualTime PutVisibleAt(std::uint64_t bytes, Rank target) const override { return sim_.PutVisibleAt(bytes, target); }
  VirtualTime GetVisibleAt(VirtualTime published_at, std::uint64_t bytes) const override {
    return sim_.GetVisibleAt(published_at, bytes);
  }
  std::optional<SimulatedSummary> Summary() const override {
    return SimulatedSummary{sim_.Now(), sim_.breakdown(), sim_.presets(), sim_.deterministic()};
  }
  // A dead rank never takes its turn again: the schedule would wait for it.
  bool survives_rank_loss() const override { return false; }

  Status ChargeCompute(const ComputeWork& work, double slowdown, std::chrono::nanoseconds) override {
    // Counts of accesses and samples stay whole numbers (truncated), as the
    // runtime's integer counters were scaled before.
    ComputeWork slowed = work;
    slowed.flops *= slowdown;
    slowed.bytes *= slowdown;
    slowed.random_accesses = static_cast<double>(static_cast<std::int64_t>(work.random_accesses * slowdown));
    slowed.samples = static_cast<double>(static_cast<std::int64_t>(work.samples * slowdown));
    slowed.first_epoch_samples = static_cast<double>(static_cast<std::int64_t>(work.first_epoch_samples * slowdown));
    return sim_.ChargeComputeWork(slowed);
  }
  using RankTime::ChargeCompute;
  Status ChargeMerge(const MergeWork& work) override { return sim_.ChargeMergeWork(work); }
  Status AdvanceTo(VirtualTime t) override { return sim_.AdvanceTo(t); }

  void ConfigureIdling(Backoff::Policy& policy) override {
    // Under the virtual-time scheduler an idle poll waits for another rank's
    // progress; otherwise (mpirun) it backs off in real time as usual, which
    // also keeps the number of (charged) polls down.
    // Where the backend prices the back-off (SimulatedTime::NextPoll), the
    // rank then resumes at the poll that would have seen the change.
    Backoff::Policy schedule = policy;  // its spins, yields and sleeps (copies of a WaitSpec share them)
    policy.on_idle = [this, schedule](std::int64_t round) -> Result<bool> {
      if (!sim_.deterministic()) return false;
      if (round == 0) idle_since_ = sim_.Now();
      STALELEARN_RETURN_IF_ERROR(sim_.IdleUntilProgress());
      const VirtualTime poll = sim_.NextPoll(idle_since_, schedule);
      if (poll > sim_.Now()) STALELEARN_RETURN_IF_ERROR(sim_.AdvanceTo(poll));
      return true;
    };
  }
  void WaitOnlyFor(const RemoteRegion& region, std::uint64_t offset, const void* seen, std::size_t bytes) override {
    sim_.WaitOnlyFor(region, offset, seen, bytes);
  }
  Status StartSchedule() override { return sim_.StartSchedule(); }
  Status ExitForCollective() override { return sim_.ExitScheduleForCollective(); }
  Status RejoinAfterCollective() override { return sim_.RejoinSchedule(); }

  Status AllReduce(std::uint64_t bytes, const std::function<Status()>& sum) override {
    std::int64_t clock_ps = sim_.Now().time_since_epoch().count();
    STALELEARN_RETURN_IF_ERROR(OutsideSchedule([&]() -> Status {
      STALELEARN_RETURN_IF_ERROR(bootstrap_.AllReduceMax(std::span(&clock_ps, 1)));
      return sum();
    }));
    return sim_.AdvanceTo(VirtualTimeFromPs(clock_ps) + sim_.AllReduceCost(bytes, bootstrap_.world_size()));
  }

  Result<VirtualTime> LatestOverRanks(const std::string& key) override {
    const std::int64_t now = sim_.Now().time_since_epoch().count();
    STALELEARN_ASSIGN_OR_RETURN(std::vector<Bytes> times, bootstrap_.AllGather(key, std::as_bytes(std::span(&now, 1))));
    std::int64_t latest = 0;
    for (const Bytes& bytes : times) {
      std::int64_t t = 0;
      if (bytes.size() != sizeof t) return Internal(key + ": a rank sent a malformed virtual time");
      std::memcpy(&t, bytes.data(), sizeof t);
      latest = std::max(latest, t);
    }
    return VirtualTimeFromPs(latest);
  }

  void LeaveSchedule() override { sim_.LeaveSchedule(); }

 private:
  SimulatedTime& sim_;
  VirtualTime idle_since_{};  // the first poll of the current wait (ConfigureIdling)
  Bootstrap& bootstrap_;
};

}  // namespace

Status RankTime::OutsideSchedule(const std::function<Status()>& collective) {
  STALELEARN_RETURN_IF_ERROR(ExitForCollective());
  STALELEARN_RETURN_IF_ERROR(collective());
  return RejoinAfterCollective();
}

RealTime& RealTime::Instance() {
  static RealTime instance;  // a function's static: usable during static initialisation too
  return instance;
}

Status RealTime::ChargeCompute(const ComputeWork&, double slowdown, std::chrono::nanoseconds took) {
  // Real work already took its time; a straggler's extra is slept.
  if (slowdown > 1) {
    std::this_thread::sleep_for(
        std::chrono::nanoseconds(static_cast<std::int64_t>((slowdown - 1) * static_cast<double>(took.count()))));
  }
  return Status::Ok();
}

std::unique_ptr<RankTime> MakeRankTime(Transport& transport, Bootstrap& bootstrap) {
  if (SimulatedTime* sim = FindSimulatedTime(transport)) return std::make_unique<VirtualRankTime>(*sim, bootstrap);
  return std::make_unique<RealTime>();
}

}  // namespace stalelearn::transport
