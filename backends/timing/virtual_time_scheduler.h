// Deterministic emulation: ranks that are threads of one process take turns in
// virtual-time order (backends/timing/README.md).
//
// A rank joins, then runs only while it holds the turn. At each scheduling
// point (Yield) it reports its clock and gives the turn back; the turn goes to
// the runnable rank with the smallest (virtual time, rank). So everything a
// rank does between two scheduling points happens, in real time, after
// everything the other ranks did at earlier virtual times, whatever the OS
// scheduler does: same inputs, same interleaving, same timeline.
//
//   scheduler.Join(rank, t0);                   // blocks until all ranks joined
//   loop: ... work ...; scheduler.Yield(rank, clock);
//   nothing to do:      clock = scheduler.IdleUntilProgress(rank);
//   scheduler.Leave(rank);
//
// Reads: a segment that ends in a read-only scheduling point (Yield with
// Effect::kReadOnly: a get issued, a transfer waited for) changed nothing
// another rank can observe, so it wakes no idle rank (a refresh of many gets
// woke every idle rank once per get: a 64:8 run spent 90% of its CPU in
// thread switches). The next segment that may write wakes them from its own
// start: a local write made in a read-only segment is then seen late, never
// before it happened.
//
// Waiting: a rank whose poll found nothing calls IdleUntilProgress. It sleeps
// until another rank ends a segment (Yield, Exit, Leave, or goes idle after
// doing something); it then becomes runnable at max(own clock, the time at
// which that segment started), since nothing it could observe changed earlier.
// If every rank in the schedule is idle, all are woken once (a poll may have
// given up on a state that was already complete), also while others are out
// for a collective that waits for the idle ones (a checkpoint boundary); if
// they all go idle again without progress, each gets kFailedPrecondition
// (deadlock) instead of hanging, unless ranks are out (they may come back); a
// wait during which no rank got a turn for `deadline` ends with kTimeout.
//
// Targeted waking: a segment names the ranks whose memory it may have written
// (its own, and the owners of what it put or atomically updated); an idle rank
// names the ranks whose memory its last poll read (its own, and the owners of
// what it got). A segment wakes only the idle ranks that read what it wrote:
// every wait of a rank is a poll of registered memory, so only a write there
// can end it. Waking every idle rank at every segment made a 64:8 run spend
// most of its time in thread switches (64 ranks waiting for ring slots woke
// at each of the others' segments). An empty set means "everyone" (Leave,
// collectives, callers that do not track memory); the all-idle wake below
// still covers a wait on anything outside the transport. Finer still, an
// idle rank may pass a Watch of the bytes its poll read from other ranks: a
// segment that did not write the idle rank's own memory wakes it only if
// those bytes changed (a memory rank's segment that merged one batch leaves
// the clock table 63 compute ranks wait on as it was).
//
// The quantum: with a quantum Q, the turn goes by (floor(time / Q), rank)
// instead of (time, rank): within one window of Q the lowest rank runs all its
// operations before the next one, so a rank issuing many small operations (a
// refresh of hundreds of gets, a push of many puts) runs them as one turn
// instead of handing the turn around after each (64:8 runs spent most of
// their time switching threads). Operations of different ranks may then run
// out of virtual-time order by less than Q. Still deterministic, but the
// windows are absolute times, so a run resumed from a checkpoint (whose
// clocks restart elsewhere) may take other turns than the uninterrupted one:
// the timing backend's default is 0, the strict order, and a quantum is an
// explicit speed-for-fidelity trade (option quantum_ns).
//
// Collectives (blocking calls outside the schedule, e.g. an allreduce): each
// rank calls ExitForCollective before and Rejoin after. While a rank is out,
// only ranks that have not yet reached that collective run; a rank that has
// rejoined waits until every rank is back, so the order after a collective is
// deterministic too.
//
// Thread-safety: all methods are thread-safe; each rank calls them from one
// thread at a time. Lifetime: shared (std::shared_ptr) by the ranks' transports.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "framework/core/status.h"
#include "framework/transport/virtual_time.h"

namespace stalelearn::backends::timing {

using transport::VirtualTime;

class VirtualTimeScheduler {
 public:
  // One turn handed out: the trace of a run (for tests and debugging).
  struct Grant {
    int rank;
    VirtualTime time;
    friend bool operator==(const Grant&, const Grant&) = default;
  };

  // `quantum`: the window within which turns go by rank rather than time
  // (header comment, the quantum); 0: strict (time, rank) order.
  VirtualTimeScheduler(int world_size, std::chrono::milliseconds deadline,
                       transport::VirtualDuration quantum = transport::VirtualDuration{0});

  int world_size() const { return static_cast<int>(ranks_.size()); }

  // Joins at `now` and blocks until every rank has joined (or left) and this
  // rank holds the turn.
  Status Join(int rank, VirtualTime now);
  // What the segment ending at a scheduling point may have done.
  enum class Effect {
    kMayWrite,  // may have changed what other ranks observe: idle ranks wake
    kReadOnly,  // only read (gets, waits for completions): no rank is woken
  };
  // Per rank of the world, nonzero where a segment wrote (or a poll read)
  // that rank's memory; empty: every rank (header comment, targeted waking).
  using RankSet = std::span<const char>;
  // Scheduling point: gives the turn back at `now` and blocks until it is this
  // rank's turn again. Only the rank holding the turn may call it. `wrote`:
  // whose memory the segments since the last progress may have written.
  Status Yield(int rank, VirtualTime now, Effect effect = Effect::kMayWrite, RankSet wrote = {});
  // What an idle rank read from other ranks' memory (backends/timing/idle_watch.h):
  // Unchanged() is true while all of it still holds what the rank saw. Called
  // under the scheduler's mutex on the thread of the rank ending a segment.
  class Watch {
   public:
    virtual ~Watch() = default;
    virtual bool Unchanged() = 0;
  };
  // Gives the turn back and sleeps until another rank made progress that may
  // have written memory in `read` and this rank holds the turn again; returns
  // this rank's new clock (>= its old one). With a `watch`, a segment that
  // wrote only other ranks' memory wakes this rank only if the watch changed.
  Result<VirtualTime> IdleUntilProgress(int rank, RankSet wrote = {}, RankSet read = {}, Watch* watch = nullptr);
  // Leaves the schedule for a blocking collective; Rejoin after it at `now`.
  Status ExitForCollective(int rank);
  Status Rejoin(int rank, VirtualTime now);
  // Leaves for good. Safe to call in any state (also from a destructor), once.
  void Leave(int rank);
  // Cores shared by ranks as threads (timing option cores): `rank` starts
  // `work` on a core at `now`; returns it stretched by max(1, busy / cores),
  // busy the ranks whose last such work covers `now` or that are runnable at
  // `now` (they act at the same instant), `rank` included, and notes it as
  // `rank`'s work.
  transport::VirtualDuration WorkOnSharedCores(int rank, VirtualTime now, transport::VirtualDuration work, int cores);

  // Turns handed out so far, in order, if tracing is on.
  void set_tracing(bool on);
  std::vector<Grant> grants() const;

 private:
  enum class State { kAbsent, kRunnable, kRunning, kIdle, kOutside, kLeft };
  struct RankState {
    State state = State::kAbsent;
    VirtualTime time{};
    VirtualTime granted_at{};   // clock when it last got the turn
    int collectives = 0;        // ExitForCollective calls so far
    bool active = true;         // yielded (kMayWrite) since it last went idle
    VirtualTime busy_from{};    // its last work on a core (WorkOnSharedCores)
    VirtualTime busy_until{};
    std::vector<char> reads;    // idle: whose memory its poll read; empty: every rank
    Watch* watch = nullptr;     // what its poll read, if watched; set at every IdleUntilProgress, read only while idle
    std::condition_variable turn;  // notified when it gets the turn (or on failure)
  };

  Status CheckRank(int rank) const;
  Status CheckRunningLocked(int rank, const char* what) const;
  // `rank` ended a segment that may have written the memory of `wrote`: idle
  // ranks that read any of it wake at max(own, its grant time).
  void NoteProgressLocked(int rank, RankSet wrote = {});
  // A clock's place in the order: the time, or with a quantum the window of
  // the quantum's length it falls in.
  std::int64_t OrderKey(VirtualTime time) const;
  // The runnable rank with the smallest (OrderKey(time), rank) allowed to run, or -1.
  int NextRankLocked() const;
  // Hands out the turn if nobody holds it (the rank to wake goes to
  // to_notify_); detects deadlock.
  void ScheduleLocked();
  // Wakes `rank` (-1: none) with the lock released meanwhile: woken under
  // it, the rank would only block on it.
  void NotifyUnlocked(std::unique_lock<std::mutex>& lock, int rank);
  // running_ = rank, mirrored in running_hint_ for WaitForTurnLocked's poll.
  void SetRunningLocked(int rank);
  Status WaitForTurnLocked(std::unique_lock<std::mutex>& lock, int rank);
  std::string DescribeLocked() const;

  const std::chrono::milliseconds deadline_;
  const transport::VirtualDuration quantum_;
  mutable std::mutex mutex_;  // guards everything below
  std::vector<RankState> ranks_;
  int arrived_ = 0;       // ranks that joined or left
  int running_ = -1;      // rank holding the turn, or -1
  std::atomic<int> running_hint_{-1};  // running_, readable without the lock (WaitForTurnLocked's poll)
  static constexpr int kPollsBeforeBlocking = 200;
  // Waiters polling now, and how many may (one per CPU besides the running
  // rank's): with 72 ranks on 2 CPUs, 70 waiters calling sched_yield took
  // 90% of the CPU from the rank holding the turn.
  std::atomic<int> polling_{0};
  const int max_pollers_;
  int to_notify_ = -1;      // granted the turn by ScheduleLocked, not yet woken
  std::vector<int> wrote_list_;  // NoteProgressLocked's scratch: the ranks written
  std::uint64_t turns_ = 0;  // turns handed out so far
  std::uint64_t progress_count_ = 0;  // segments that ended with progress
  // progress_count_ when every rank was idle and all were woken once; ~0: never.
  std::uint64_t woken_all_at_progress_ = ~std::uint64_t{0};
  std::string failure_;   // set on deadlock: every later wait fails with it
  bool tracing_ = false;
  std::vector<Grant> grants_;
};

}  // namespace stalelearn::backends::timing
