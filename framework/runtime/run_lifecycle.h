// One rank's run from start to report, for both roles: the steps every run
// takes in the same order, written once.
//
// Every rank starts alike:
//
//   memory rank:  ConnectMemory (register, sync)    compute rank: ConnectCompute (sync, import)
//   both:         Start: [a resumed run's time alignment] -> start barrier -> join the
//                 virtual-time schedule -> open the stop agreement
//   ...merge / train to the run's end (checkpoints are cut on the way: checkpointer.h)...
//
// and the run ends alike: LeaveSchedule, [ExcludeDead], EndTraining (the
// stop's checkpoint is committed, then the "all merged" barrier), Gather
// (the collective report). The roles' loops (memory_role.cc,
// compute_role.cc) only say what a rank does in between.
//
// Thread-safety: one RunLifecycle per rank, used by that rank's thread.
// Lifetime: `env`, `mode` and `counting` outlive it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "framework/metrics/counting_transport.h"
#include "framework/runtime/checkpointer.h"
#include "framework/runtime/consistency_mode.h"
#include "framework/runtime/data_plane.h"
#include "framework/runtime/rank_env.h"
#include "framework/runtime/train.h"

namespace stalelearn::runtime {

class RunLifecycle {
 public:
  // Checks what every rank must agree on before the start barrier (strata,
  // surviving deaths, checkpoints against the mode) and reads the checkpoint
  // to resume from. One-line kInvalidArgument for a config that cannot run.
  static Result<std::unique_ptr<RunLifecycle>> Make(const RankEnv& env, const ModeDefinition& mode,
                                                    metrics::CountingTransport& counting);

  const RankEnv& env() const { return env_; }
  const ModeDefinition& mode() const { return mode_; }
  Checkpointer& checkpointer() { return *checkpointer_; }
  transport::Rank me() const { return env_.transport.rank(); }
  bool survives_deaths() const { return env_.config.faults().dead_after_seconds() > 0; }

  // Protocol clocks (clock_loop.h): of an epoch, before the first epoch (1
  // when clock 0 carries the data-dependent initialisation), of the run.
  std::int64_t clocks_per_epoch() const { return clocks_per_epoch_; }
  std::int64_t clock_offset() const { return clock_offset_; }
  std::int64_t TotalClocks() const { return clock_offset_ + env_.config.training().epochs() * clocks_per_epoch_; }
  // The epochs trained before protocol clock `end`.
  int EpochsDone(std::int64_t end) const;

  // The run's data plane, before Start (the memory ranks register their
  // regions, the compute ranks import them after the sync).
  Result<MemoryEndpoints> ConnectMemory(const DataPlaneGeometry& geometry);
  Result<ComputeEndpoints> ConnectCompute();
  // Collective: the steps between the data plane and the first clock.
  Status Start();
  // Timing backend: leaves the virtual-time schedule before the final
  // collectives (the scheduler must not wait for a rank blocked in one).
  void LeaveSchedule();

  // The clock every rank stopped before, when a stop was agreed before the
  // run's last clock (one agreed at the very end changes nothing).
  std::optional<std::int64_t> StoppedClock() const;
  // Stopped with training.checkpoint.dir set, after training something: the
  // run has a checkpoint of its stop clock.
  bool HasStopCheckpoint() const;
  // ... which the run writes at its end (not a checkpoint clock, whose cut
  // every rank has written already).
  bool WritesStopCheckpoint() const;

  // The survivors go on without the dead compute ranks (peer_liveness.h);
  // every survivor passes the same set.
  Status ExcludeDead(const std::vector<model::ComputeIndex>& dead);
  // Collective, after this rank's last clock or merge and any file of the
  // stop's checkpoint: commits that checkpoint, then the "all merged" barrier.
  Status EndTraining();
  // Collective: the run's report from every rank's part.
  Result<RankRun> Gather(proto::Report partial, std::vector<ClockRecord> records);
  // This rank's transport counters so far (for its rank report).
  metrics::TransportCounters transport_counters() const { return counting_.counters(); }

 private:
  RunLifecycle(const RankEnv& env, const ModeDefinition& mode, metrics::CountingTransport& counting);
  Status CheckStrata() const;
  Status CheckFaultsAndCheckpoints();
  // The lowest surviving world rank writes the report.
  bool WritesReport() const;
  // After the final barrier: warns when the run's last checkpoint has no
  // manifest (a directory the ranks do not share, or a dead rank's part).
  void WarnIfLastCutIncomplete() const;

  const RankEnv& env_;
  const ModeDefinition& mode_;
  metrics::CountingTransport& counting_;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::vector<int> excluded_;  // world ranks excluded as dead (ExcludeDead)
  const std::int64_t clocks_per_epoch_;
  const std::int64_t clock_offset_;
};

// The roles' loops (memory_role.cc, compute_role.cc): each runs its rank's
// part and returns its part of the report through lifecycle.Gather.
Result<RankRun> RunMemoryRole(RunLifecycle& lifecycle, const DataPlaneGeometry& geometry);
// `geometry`: null for a mode without memory ranks.
Result<RankRun> RunComputeRole(RunLifecycle& lifecycle, const DataPlaneGeometry* geometry);

}  // namespace stalelearn::runtime
