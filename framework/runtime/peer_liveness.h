// Surviving a compute rank's death inside the job (faults.dead_after_seconds;
// framework/README.md, "Checkpoints and dead ranks"):
//
//   compute rank c                         memory rank m
//   HeartbeatSender: a thread raises the   DeadRankDetector: each poll pass
//   heartbeat word of c's ring at every    reads every live, unfinished ring's
//   memory rank ~10x a second (put +       heartbeat word; one that stood still
//   flush), from start to the end of the   for dead_after is dead: the poller
//   run                                    drops it (RingPoller::MarkDead) and
//                                          the next snapshot publishes its
//                                          clock as kDeadClock
//   DeadRankAwareMode: before Release,
//   waits until every compute rank has
//   finished or is dead at every memory
//   rank, and remembers the dead ones
//   (then calls on_settled: the last
//   moment the memory ranks serve reads)
//
// Afterwards every survivor excludes the dead rank from the bootstrap
// (Bootstrap::ExcludeDeadRank) before the final barrier and the report. A
// heartbeat is a thread of its own so that a rank blocked in a long wait (or
// a long kernel) stays alive to its peers; a rank whose process is gone stops
// it. Under `mpirun` the job survives only with `--continuous`.
//
// Thread-safety: HeartbeatSender runs its own thread (the transport allows
// calls from any thread); the rest belong to the rank's main thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "framework/runtime/consistency_mode.h"
#include "framework/sync/clock_table.h"
#include "framework/sync/ring_layout.h"

namespace stalelearn::runtime {

inline constexpr std::chrono::milliseconds kHeartbeatPeriod{100};

class HeartbeatSender {
 public:
  // `rings`: this compute rank's ring at every memory rank (they must outlive it).
  HeartbeatSender(transport::Transport& transport, std::vector<const transport::RemoteRegion*> rings,
                  sync::RingGeometry geometry);
  ~HeartbeatSender();  // stops the thread
  HeartbeatSender(const HeartbeatSender&) = delete;
  HeartbeatSender& operator=(const HeartbeatSender&) = delete;

 private:
  void Beat();

  transport::Transport& transport_;
  std::vector<const transport::RemoteRegion*> rings_;
  sync::RingGeometry geometry_;
  std::uint64_t beats_ = 0;  // the value put (the buffer must outlive the put)
  std::mutex mutex_;
  std::condition_variable stop_signal_;
  bool stop_ = false;
  std::thread thread_;
};

class DeadRankDetector {
 public:
  // rings[c]: compute rank c's ring on this memory rank.
  DeadRankDetector(std::vector<transport::MemoryRegion*> rings, sync::RingGeometry geometry,
                   std::chrono::duration<double> dead_after);
  // The compute ranks among `watched` (alive and unfinished) whose heartbeat
  // has not moved for dead_after. A rank's clock starts at its first check.
  std::vector<model::ComputeIndex> Check(const std::vector<bool>& watched);

 private:
  std::vector<transport::MemoryRegion*> rings_;
  sync::RingGeometry geometry_;
  std::chrono::duration<double> dead_after_;
  std::vector<std::uint64_t> last_beat_;
  std::vector<std::chrono::steady_clock::time_point> last_change_;
  std::vector<bool> seen_;
};

// Forwards to the configured mode; Release first waits until every compute
// rank finished its `total_clocks` clocks or was dropped as dead at every
// memory rank (the memory ranks stop only then), and records the dead ones.
class DeadRankAwareMode final : public ConsistencyMode {
 public:
  // `published`: every memory rank's published region (they must outlive it).
  // `before_clock`: called with each clock before the inner mode's BeforeClock
  // (the planted kill, Checkpointer::MaybeKill).
  DeadRankAwareMode(const RankEnv& env, std::unique_ptr<ConsistencyMode> inner,
                    std::vector<const transport::RemoteRegion*> published, sync::PublishedGeometry geometry,
                    std::function<void(std::int64_t)> before_clock);

  model::ModelView& view() override { return inner_->view(); }
  const model::Replica* replica() const override { return inner_->replica(); }
  Status ShareInitialization() override { return inner_->ShareInitialization(); }
  Status BeforeClock(std::int64_t clock, std::span<const std::int64_t> samples, ClockRecord& record) override {
    if (before_clock_) before_clock_(clock);
    return inner_->BeforeClock(clock, samples, record);
  }
  Status AfterClock(std::int64_t clock, ClockRecord& record) override { return inner_->AfterClock(clock, record); }
  Status FocusRows(model::TableId table, std::int64_t first, std::int64_t last, std::int64_t until,
                   model::ComputeIndex writer_before, std::int64_t settled_before, ClockRecord& record) override {
    return inner_->FocusRows(table, first, last, until, writer_before, settled_before, record);
  }
  Status PrefetchFocus(model::TableId table, std::int64_t first, std::int64_t last, model::ComputeIndex writer_before,
                       std::int64_t settled_before) override {
    return inner_->PrefetchFocus(table, first, last, writer_before, settled_before);
  }
  void WillFocus(model::TableId table) override { inner_->WillFocus(table); }
  Status PushHeld() override { return inner_->PushHeld(); }
  Status ReadModel(TableSet& model, ModelRows rows) override { return inner_->ReadModel(model, rows); }
  Status Finish(std::uint64_t total_clocks) override;
  Status ReadFinalModel(TableSet& model, ModelRows rows) override {
    return inner_->ReadFinalModel(model, rows);
  }
  Status Release() override;

  // After Release: the compute ranks the memory ranks dropped.
  const std::vector<model::ComputeIndex>& dead() const { return dead_; }

  // Called inside Release once the dead set is known (every survivor sees
  // the same one) and before this rank releases the memory ranks, so it may
  // still read the final model (ReadFinalModel): the way a survivor takes
  // over a dead rank's duties (compute_role.cc: the whole-model evaluation of a
  // dead compute rank 0). An error fails the Release.
  void set_on_settled(std::function<Status(const std::vector<model::ComputeIndex>& dead)> on_settled) {
    on_settled_ = std::move(on_settled);
  }

 private:
  const RankEnv& env_;
  std::unique_ptr<ConsistencyMode> inner_;
  sync::ClockTable clocks_;
  std::function<void(std::int64_t)> before_clock_;
  std::function<Status(const std::vector<model::ComputeIndex>&)> on_settled_;
  std::uint64_t total_clocks_ = 0;
  std::vector<model::ComputeIndex> dead_;
};

}  // namespace stalelearn::runtime
