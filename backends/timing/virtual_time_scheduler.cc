#include "backends/timing/virtual_time_scheduler.h"

#include <fmt/format.h>

#include <thread>

#include <algorithm>
#include <utility>

namespace stalelearn::backends::timing {

VirtualTimeScheduler::VirtualTimeScheduler(int world_size, std::chrono::milliseconds deadline,
                                           transport::VirtualDuration quantum)
    : deadline_(deadline),
      quantum_(std::max(quantum, transport::VirtualDuration{0})),
      ranks_(static_cast<std::size_t>(std::max(world_size, 0))),
      max_pollers_(std::max(1, static_cast<int>(std::thread::hardware_concurrency()) - 1)) {}

Status VirtualTimeScheduler::CheckRank(int rank) const {
  if (rank < 0 || rank >= world_size()) {
    return InvalidArgument(fmt::format("virtual-time scheduler: rank {} outside 0..{}", rank, world_size() - 1));
  }
  return Status::Ok();
}

Status VirtualTimeScheduler::CheckRunningLocked(int rank, const char* what) const {
  if (running_ != rank) {
    return FailedPrecondition(fmt::format("virtual-time scheduler: rank {} called {} without holding the turn ({})",
                                          rank, what, DescribeLocked()));
  }
  return Status::Ok();
}

Status VirtualTimeScheduler::Join(int rank, VirtualTime now) {
  STALELEARN_RETURN_IF_ERROR(CheckRank(rank));
  std::unique_lock lock(mutex_);
  RankState& me = ranks_[rank];
  if (me.state != State::kAbsent) return FailedPrecondition(fmt::format("virtual-time scheduler: rank {} joined twice", rank));
  me.state = State::kRunnable;
  me.time = now;
  ++arrived_;
  ScheduleLocked();
  return WaitForTurnLocked(lock, rank);
}

Status VirtualTimeScheduler::Yield(int rank, VirtualTime now, Effect effect, RankSet wrote) {
  STALELEARN_RETURN_IF_ERROR(CheckRank(rank));
  std::unique_lock lock(mutex_);
  STALELEARN_RETURN_IF_ERROR(CheckRunningLocked(rank, "Yield"));
  RankState& me = ranks_[rank];
  me.state = State::kRunnable;
  me.time = std::max(me.time, now);
  SetRunningLocked(-1);
  if (effect == Effect::kMayWrite) {
    me.active = true;
    NoteProgressLocked(rank, wrote);
  }
  ScheduleLocked();
  return WaitForTurnLocked(lock, rank);
}

Result<VirtualTime> VirtualTimeScheduler::IdleUntilProgress(int rank, RankSet wrote, RankSet read, Watch* watch) {
  STALELEARN_RETURN_IF_ERROR(CheckRank(rank));
  std::unique_lock lock(mutex_);
  STALELEARN_RETURN_IF_ERROR(CheckRunningLocked(rank, "IdleUntilProgress"));
  RankState& me = ranks_[rank];
  // A segment that did something (it yielded since it last idled) may have
  // changed what the others wait for; a bare poll did not.
  if (me.active) NoteProgressLocked(rank, wrote);
  me.reads.assign(read.begin(), read.end());
  me.watch = watch;
  me.active = false;
  // A poll's gets read memory as it was when issued, and waiting for them
  // may have handed the turn to the writer it waits for: a write already
  // past when it idles would wake it never (the writer may be done), only
  // the all-idle wake much later. A watch that already changed keeps it
  // runnable, at its own time (the write came no later in virtual time).
  me.state = watch != nullptr && !watch->Unchanged() ? State::kRunnable : State::kIdle;
  SetRunningLocked(-1);
  ScheduleLocked();
  STALELEARN_RETURN_IF_ERROR(WaitForTurnLocked(lock, rank));
  return me.time;
}

Status VirtualTimeScheduler::ExitForCollective(int rank) {
  STALELEARN_RETURN_IF_ERROR(CheckRank(rank));
  std::unique_lock lock(mutex_);
  STALELEARN_RETURN_IF_ERROR(CheckRunningLocked(rank, "ExitForCollective"));
  RankState& me = ranks_[rank];
  me.state = State::kOutside;
  ++me.collectives;
  me.active = true;
  SetRunningLocked(-1);
  NoteProgressLocked(rank);
  ScheduleLocked();
  NotifyUnlocked(lock, std::exchange(to_notify_, -1));
  return Status::Ok();
}

Status VirtualTimeScheduler::Rejoin(int rank, VirtualTime now) {
  STALELEARN_RETURN_IF_ERROR(CheckRank(rank));
  std::unique_lock lock(mutex_);
  RankState& me = ranks_[rank];
  if (me.state != State::kOutside) {
    return FailedPrecondition(fmt::format("virtual-time scheduler: rank {} rejoined without leaving", rank));
  }
  me.state = State::kRunnable;
  me.time = std::max(me.time, now);
  ScheduleLocked();
  return WaitForTurnLocked(lock, rank);
}

void VirtualTimeScheduler::Leave(int rank) {
  if (!CheckRank(rank).ok()) return;
  std::unique_lock lock(mutex_);
  RankState& me = ranks_[rank];
  if (me.state == State::kLeft) return;
  if (me.state == State::kAbsent) ++arrived_;
  if (running_ == rank) {
    SetRunningLocked(-1);
    NoteProgressLocked(rank);
  }
  me.state = State::kLeft;
  ScheduleLocked();
  NotifyUnlocked(lock, std::exchange(to_notify_, -1));
}

void VirtualTimeScheduler::NoteProgressLocked(int rank, RankSet wrote) {
  ++progress_count_;
  const VirtualTime since = ranks_[rank].granted_at;
  // The ranks written, listed once: an idle rank's check is then a lookup per
  // written rank, not a scan of the world (a 64:8 run ends ~10^5 segments).
  wrote_list_.clear();
  for (std::size_t i = 0; i < wrote.size(); ++i) {
    if (wrote[i] != 0) wrote_list_.push_back(static_cast<int>(i));
  }
  // Whether `reads` (empty: all) and `wrote` (empty: all) share a rank.
  const auto overlaps = [&](const std::vector<char>& reads) {
    if (reads.empty() || wrote.empty()) return true;
    return std::ranges::any_of(wrote_list_, [&](int w) {
      return static_cast<std::size_t>(w) < reads.size() && reads[static_cast<std::size_t>(w)] != 0;
    });
  };
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    RankState& other = ranks_[r];
    if (static_cast<int>(r) == rank || other.state != State::kIdle || !overlaps(other.reads)) continue;
    // Its own memory written: its poll may have read that directly.
    const bool wrote_its_memory = wrote.empty() || (r < wrote.size() && wrote[r] != 0);
    if (!wrote_its_memory && other.watch != nullptr && other.watch->Unchanged()) continue;
    other.state = State::kRunnable;
    other.time = std::max(other.time, since);
  }
}

std::int64_t VirtualTimeScheduler::OrderKey(VirtualTime time) const {
  const std::int64_t t = time.time_since_epoch().count();
  return quantum_.count() > 0 ? t / quantum_.count() : t;
}

transport::VirtualDuration VirtualTimeScheduler::WorkOnSharedCores(int rank, VirtualTime now,
                                                                   transport::VirtualDuration work, int cores) {
  std::lock_guard lock(mutex_);
  int busy = 1;
  for (std::size_t r = 0; r < ranks_.size(); ++r) {
    const RankState& other = ranks_[r];
    if (static_cast<int>(r) == rank) continue;
    // Working at now, or about to act at now (runnable at the same instant:
    // a rank that works from now too must count, whichever goes first).
    const bool working = other.busy_from <= now && now < other.busy_until;
    const bool starting = other.state == State::kRunnable && other.time <= now;
    busy += working || starting ? 1 : 0;
  }
  if (busy > cores) {
    work = transport::VirtualDuration(static_cast<std::int64_t>(static_cast<double>(work.count()) * busy / cores));
  }
  RankState& mine = ranks_[static_cast<std::size_t>(rank)];
  mine.busy_from = now;
  mine.busy_until = now + work;
  return work;
}

int VirtualTimeScheduler::NextRankLocked() const {
  int max_collectives = 0;
  bool someone_outside = false;
  for (const RankState& r : ranks_) {
    if (r.state == State::kLeft) continue;
    max_collectives = std::max(max_collectives, r.collectives);
    someone_outside |= r.state == State::kOutside;
  }
  int next = -1;
  for (int r = 0; r < world_size(); ++r) {
    const RankState& candidate = ranks_[r];
    if (candidate.state != State::kRunnable) continue;
    // While a collective is under way only ranks that still have to reach it run.
    if (someone_outside && candidate.collectives >= max_collectives) continue;
    if (next == -1 || OrderKey(candidate.time) < OrderKey(ranks_[next].time)) next = r;  // ties: lower rank
  }
  return next;
}

void VirtualTimeScheduler::SetRunningLocked(int rank) {
  running_ = rank;
  running_hint_.store(rank, std::memory_order_release);
}

void VirtualTimeScheduler::ScheduleLocked() {
  if (running_ != -1 || arrived_ < world_size() || !failure_.empty()) return;
  int next = NextRankLocked();
  if (next == -1) {
    const bool any_idle = std::ranges::any_of(ranks_, [](const RankState& r) { return r.state == State::kIdle; });
    const bool any_outside =
        std::ranges::any_of(ranks_, [](const RankState& r) { return r.state == State::kOutside; });
    if (!any_idle) return;  // ranks outside for a collective come back
    // Every rank in the schedule is idle. A poll may have given up on a state
    // that was already complete (e.g. a seqlock read that overlapped a
    // publish), so first wake them all once; only if none of them makes
    // progress before all are idle again is it a deadlock. Also while ranks
    // are outside for a collective: they wait for the idle ones to reach it
    // (a checkpoint boundary), so nothing else would wake them.
    if (woken_all_at_progress_ == progress_count_) {
      if (any_outside) return;  // they may still come back; the turn watchdog ends a real hang
      failure_ = fmt::format("virtual-time scheduler: deadlock, every remaining rank waits for progress ({})",
                             DescribeLocked());
      for (RankState& r : ranks_) r.turn.notify_all();
      return;
    }
    woken_all_at_progress_ = progress_count_;
    for (RankState& r : ranks_) {
      if (r.state == State::kIdle) r.state = State::kRunnable;
    }
    next = NextRankLocked();
  }
  SetRunningLocked(next);
  ranks_[next].state = State::kRunning;
  ranks_[next].granted_at = ranks_[next].time;
  ++turns_;
  if (tracing_) grants_.push_back({next, ranks_[next].time});
  to_notify_ = next;  // woken by the caller once the lock is released
}

void VirtualTimeScheduler::NotifyUnlocked(std::unique_lock<std::mutex>& lock, int rank) {
  if (rank == -1) return;
  lock.unlock();
  ranks_[static_cast<std::size_t>(rank)].turn.notify_one();
  lock.lock();
}

Status VirtualTimeScheduler::WaitForTurnLocked(std::unique_lock<std::mutex>& lock, int rank) {
  // A rank far ahead in virtual time may wait long for its turn while the
  // others catch up; only a schedule in which no turn at all was handed out
  // for a whole deadline is a hang.
  // Poll briefly before blocking: a hand-off through the condition variable
  // alone wakes a sleeping thread, which on an idle VM means waking a halted
  // vCPU (a 4:1 timing run took 2.5 s idle, 0.5 s with a busy loop beside
  // it). The poll yields, so waiting ranks give way to the running one.
  // Not WaitFor (framework/core/wait.h): after the bounded poll this blocks on
  // a condition variable under the scheduler's lock, woken by the hand-off,
  // and its deadline restarts whenever any rank got a turn meanwhile.
  // The turn this call's ScheduleLocked handed to another rank (to_notify_)
  // is notified once the lock is released.
  const int handed_to = std::exchange(to_notify_, -1);
  if (running_ != rank && failure_.empty()) {
    lock.unlock();
    if (handed_to != -1) ranks_[static_cast<std::size_t>(handed_to)].turn.notify_one();
    if (polling_.fetch_add(1, std::memory_order_relaxed) < max_pollers_) {
      for (int i = 0; i < kPollsBeforeBlocking && running_hint_.load(std::memory_order_acquire) != rank; ++i) {
        std::this_thread::yield();
      }
    }
    polling_.fetch_sub(1, std::memory_order_relaxed);
    lock.lock();
  } else if (handed_to != rank) {
    NotifyUnlocked(lock, handed_to);
  }
  while (true) {
    const std::uint64_t turns_before = turns_;
    ranks_[rank].turn.wait_for(lock, deadline_, [&] { return running_ == rank || !failure_.empty(); });
    if (running_ == rank) return Status::Ok();
    if (!failure_.empty()) return FailedPrecondition(failure_);
    if (turns_ == turns_before) {
      return TimeoutError(fmt::format("virtual-time scheduler: no rank got a turn for {} ms while rank {} waited ({})",
                                      deadline_.count(), rank, DescribeLocked()));
    }
  }
}

std::string VirtualTimeScheduler::DescribeLocked() const {
  static constexpr const char* kNames[] = {"absent", "runnable", "running", "idle", "outside", "left"};
  std::vector<std::string> parts;
  for (int r = 0; r < world_size(); ++r) {
    parts.push_back(fmt::format("{}:{}@{}ps", r, kNames[static_cast<int>(ranks_[r].state)],
                                ranks_[r].time.time_since_epoch().count()));
  }
  return fmt::format("{}", fmt::join(parts, " "));
}

void VirtualTimeScheduler::set_tracing(bool on) {
  std::lock_guard lock(mutex_);
  tracing_ = on;
}

std::vector<VirtualTimeScheduler::Grant> VirtualTimeScheduler::grants() const {
  std::lock_guard lock(mutex_);
  return grants_;
}

}  // namespace stalelearn::backends::timing
