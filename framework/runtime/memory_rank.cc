#include "framework/runtime/memory_rank.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "framework/core/planted_defect.h"
#include "framework/core/thread_cpu_time.h"
#include "framework/core/wait.h"
#include "framework/runtime/peer_liveness.h"
#include "framework/runtime/stop_agreement.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::runtime {
namespace {

// Clocks a memory rank with a single compute rank merges between publishes
// while batches keep coming (MemoryRank::Run).
constexpr std::uint64_t kSoleWriterClocks = 16;

std::vector<transport::MemoryRegion*> RawRings(const MemoryEndpoints& e) {
  std::vector<transport::MemoryRegion*> rings;
  for (const auto& r : e.rings) rings.push_back(r.get());
  return rings;
}

}  // namespace

Result<std::unique_ptr<MemoryRank>> MemoryRank::Make(const RankEnv& env, MemoryEndpoints endpoints,
                                                     const DataPlaneGeometry& geometry,
                                                     const proto::MemoryShardState* restored) {
  const model::MemoryIndex me = env.roles.memory_index(env.transport.rank());
  STALELEARN_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<sync::MergePolicy>> policies,
                              sync::CreateMergePolicies(env.merge, env.layout, me));
  if (restored != nullptr) {
    if (restored->policy_state_size() != static_cast<int>(policies.size())) {
      return DataLoss(fmt::format("checkpoint of memory rank {}: state of {} tables, the model has {}", me.value,
                                  restored->policy_state_size(), policies.size()));
    }
    for (std::size_t t = 0; t < policies.size(); ++t) {
      if (DefectPlanted(PlantedDefect::kLastTablePolicyStateNotRestored) && t + 1 == policies.size()) continue;
      const std::string& bytes = restored->policy_state(static_cast<int>(t));
      Status status = policies[t]->RestoreState(std::as_bytes(std::span(bytes.data(), bytes.size())));
      if (!status.ok()) return status.WithContext(fmt::format("checkpoint of memory rank {}", me.value));
    }
  }
  return std::unique_ptr<MemoryRank>(new MemoryRank(env, std::move(endpoints), geometry, std::move(policies)));
}

MemoryRank::MemoryRank(const RankEnv& env, MemoryEndpoints endpoints, const DataPlaneGeometry& geometry,
                       std::vector<std::unique_ptr<sync::MergePolicy>> policies)
    : env_(env),
      me_(env.roles.memory_index(env.transport.rank())),
      endpoints_(std::move(endpoints)),
      merger_(env.layout, me_, env.config.training().threads_per_rank(), std::move(policies)),
      changed_(env.layout, me_) {
  Plumb(geometry);
}

void MemoryRank::Plumb(const DataPlaneGeometry& geometry) {
  publisher_ = std::make_unique<sync::SnapshotPublisher>(*endpoints_.published, geometry.published[me_.value],
                                                         env_.layout);
  poller_ = std::make_unique<sync::RingPoller>(env_.layout, me_, geometry.ring, RawRings(endpoints_),
                                               *endpoints_.published, geometry.published[me_.value], merger_);
  poller_->set_changed_rows(&changed_);
  // The PIM's merge work is charged (virtual time: priced by the memory
  // preset); a scheduler error ends the run at the next poll.
  poller_->set_merge_observer([this](const metrics::WorkCounters& w) {
    if (charge_status_.ok()) charge_status_ = env_.wait.time->ChargeMerge(metrics::ToMergeWork(w));
  });
  // A gather's rows are written once its work is charged.
  poller_->set_reply_clock([this] { return env_.wait.time->Now().time_since_epoch().count(); });
  // Never merge a batch before the (virtual) time its put became visible.
  poller_->set_merge_gate([this](const sync::BatchHeader& header) -> Status {
    const transport::VirtualTime visible_at = transport::VirtualTimeFromPs(header.visible_at_ps);
    STALELEARN_RETURN_IF_ERROR(env_.wait.time->AdvanceTo(visible_at));
    if (env_.hooks.before_timed_merge) env_.hooks.before_timed_merge(me_, visible_at, env_.wait.time->Now());
    return Status::Ok();
  });
}

void MemoryRank::EnableCheckpointCuts(CheckpointClocks clocks, CheckpointCut::Writer writer) {
  cut_ = std::make_unique<CheckpointCut>(merger_, *poller_, clocks, std::move(writer));
  poller_->set_merge_tap(cut_.get());
}

void MemoryRank::Publish() {
  // The first generation of a data plane is stamped 0: it exists before the
  // schedule starts.
  const std::int64_t now_ps = publisher_->generation() > 0 ? env_.wait.time->Now().time_since_epoch().count() : 0;
  publisher_->Publish(merger_.master(), *poller_, changed_, now_ps);
  changed_.Clear();
}

void MemoryRank::PublishInitial() {
  InitializeShard(env_.app, env_.layout, me_, merger_.mutable_master());
  changed_.MarkAll();
  Publish();
}

Status MemoryRank::PublishRestored(const proto::MemoryShardState& state) {
  model::TableSet& master = merger_.mutable_master();
  if (state.tables_size() != static_cast<int>(master.size()) ||
      state.merged_clock_size() != poller_->compute_ranks()) {
    return DataLoss(fmt::format("checkpoint of memory rank {}: {} tables and {} compute ranks, this run has {} and {}",
                                me_.value, state.tables_size(), state.merged_clock_size(), master.size(),
                                poller_->compute_ranks()));
  }
  for (std::size_t t = 0; t < master.size(); ++t) {
    const std::string& bytes = state.tables(static_cast<int>(t));
    std::span<std::byte> rows = master[t].bytes();
    if (bytes.size() != rows.size()) {
      return DataLoss(fmt::format("checkpoint of memory rank {}: table {} has {} bytes, the shard {}", me_.value, t,
                                  bytes.size(), rows.size()));
    }
    if (DefectPlanted(PlantedDefect::kResumeDropsShardRows)) continue;
    std::memcpy(rows.data(), bytes.data(), bytes.size());
  }
  for (int c = 0; c < poller_->compute_ranks(); ++c) {
    poller_->RestoreMergedClock(model::ComputeIndex{c}, state.merged_clock(c));
  }
  changed_.MarkAll();
  Publish();
  return Status::Ok();
}

proto::MemoryShardState MemoryRank::SaveState(std::uint64_t clock) const {
  std::vector<std::uint64_t> merged;
  std::vector<std::uint64_t> consumed;
  for (int c = 0; c < poller_->compute_ranks(); ++c) {
    merged.push_back(poller_->merged_clock(model::ComputeIndex{c}));
    consumed.push_back(poller_->consumed(model::ComputeIndex{c}));
  }
  return ShardStateOf(merger_, clock, merged, consumed);
}

MemoryRank::~MemoryRank() = default;

void MemoryRank::EnableDeadRankDetection(std::chrono::duration<double> dead_after) {
  detector_ = std::make_unique<DeadRankDetector>(RawRings(endpoints_), poller_->ring_geometry(), dead_after);
}

bool MemoryRank::DropDeadRanks() {
  if (!detector_) return false;
  std::vector<bool> watched(static_cast<std::size_t>(poller_->compute_ranks()));
  for (int c = 0; c < poller_->compute_ranks(); ++c) {
    // A released rank needs nothing more: its heartbeat may stop.
    const std::byte* ring = endpoints_.rings[static_cast<std::size_t>(c)]->data();
    const bool released = transport::LoadAcquire64(ring + poller_->ring_geometry().released_word_offset()) != 0;
    watched[static_cast<std::size_t>(c)] = !poller_->dead(model::ComputeIndex{c}) && !released;
  }
  const std::vector<model::ComputeIndex> dead = detector_->Check(watched);
  for (model::ComputeIndex c : dead) {
    const std::uint64_t merged = poller_->merged_clock_when_alive(c);
    std::fprintf(stderr,
                 "[stalelearn] memory rank %d: compute rank %d (rank %d) sent no heartbeat for %.1f s: dropped after "
                 "its clock %llu; its unmerged batches are discarded, its remaining samples skipped\n",
                 me_.value, c.value, env_.roles.compute_rank(c).value,
                 env_.config.faults().dead_after_seconds(), static_cast<unsigned long long>(merged));
    poller_->MarkDead(c);
    dead_ranks_.push_back({c, merged});
  }
  return !dead.empty();
}

Result<MemoryRankResult> MemoryRank::Run() {
  // A work loop rather than a wait for one condition (WaitFor): it merges
  // while batches come and its wait limit counts from the last batch, so it
  // uses WaitFor's pieces, the back-off and a restarted deadline.
  Backoff backoff(env_.wait.backoff);
  Deadline no_batch_limit(env_.wait.timeout);
  bool unpublished = false;
  std::uint64_t published_min_clock = poller_->slowest_merged_clock();
  // With one compute rank nobody waits for a clock to be published (its gate
  // has no other rank to wait for, its replica holds its own writes): while
  // batches keep coming, a publish every kSoleWriterClocks clocks writes each
  // row once for all its changes in them instead of once per clock.
  const std::uint64_t clocks_per_publish = poller_->compute_ranks() == 1 ? kSoleWriterClocks : 1;
  while (true) {
    env_.transport.Progress();
    const bool paused = env_.hooks.merging_paused && env_.hooks.merging_paused(me_);
    // The thread's CPU is read only around polls that will merge (a system
    // call: never on an idle poll); a batch committed between the peek and
    // the poll goes untimed.
    const bool timed = !paused && poller_->AnyCommitted();
    const std::chrono::nanoseconds busy_from = timed ? ThreadCpuTime() : std::chrono::nanoseconds(0);
    const std::int64_t rows_before = poller_->counters().rows_merged;
    const int consumed = paused ? 0 : poller_->PollOnce();
    STALELEARN_RETURN_IF_ERROR(charge_status_);
    if (consumed > 0) {
      // The host's data plane around the merges (decode, change marks, the
      // snapshot records): priced per row by a host memory preset.
      STALELEARN_RETURN_IF_ERROR(env_.wait.time->ChargeMerge(
          {.rows = static_cast<std::uint64_t>(poller_->counters().rows_merged - rows_before)}));
      // While batches keep coming, publish only when the slowest rank's
      // clock advanced (what SSP/BSP gates wait for); once the rings are
      // drained, publish at once. A publish writes only the changed rows.
      unpublished = true;
      const std::uint64_t min_clock = poller_->slowest_merged_clock();
      if (min_clock >= published_min_clock + clocks_per_publish) {
        Publish();
        published_min_clock = min_clock;
        unpublished = false;
        if (merged_clock_observer_) merged_clock_observer_(min_clock);
      }
      if (cut_) STALELEARN_RETURN_IF_ERROR(cut_->WriteCompleted());
      if (timed) busy_cpu_ += ThreadCpuTime() - busy_from;
      backoff.Reset();
      no_batch_limit.Restart();
      continue;
    }
    STALELEARN_RETURN_IF_ERROR(poller_->failure());
    // Nobody may wait for a dead rank's clocks: publish its drop at once.
    if (DropDeadRanks()) {
      unpublished = true;
      if (cut_) STALELEARN_RETURN_IF_ERROR(cut_->WriteCompleted());
    }
    if (unpublished) {
      const std::chrono::nanoseconds publish_from = ThreadCpuTime();  // once per drained burst
      Publish();
      busy_cpu_ += ThreadCpuTime() - publish_from;
      published_min_clock = poller_->slowest_merged_clock();
      unpublished = false;
    }
    if (env_.stop != nullptr) {
      // The run's stop agreement (stop_agreement.h): join when a stop was
      // asked for, or at the end, once every compute rank has finished.
      STALELEARN_RETURN_IF_ERROR(env_.stop->Poll());
      if (!paused && poller_->AllFinished()) STALELEARN_RETURN_IF_ERROR(env_.stop->JoinAtEnd(0));
    }
    // Compute ranks still flush, and the evaluating one reads the final
    // snapshot, after finishing: progress until all released us.
    if (!paused && poller_->AllFinished() && poller_->AllReleased()) break;
    if (no_batch_limit.Expired()) {
      return TimeoutError(fmt::format("memory rank {} received no batch for the wait limit; some compute rank "
                                      "stopped without finishing (or never read the final model); {}",
                                      me_.value, sync::DescribeSlowestRings(*poller_)));
    }
    STALELEARN_RETURN_IF_ERROR(backoff.Idle());
  }
  return MemoryRankResult{poller_->counters(), publisher_->generation(), cut_ ? cut_->forks() : 0,
                          std::chrono::duration<double>(busy_cpu_).count()};
}

}  // namespace stalelearn::runtime
