// Turns a stop request (stop_request.h: a signal, or debug.stop_at_clock)
// into one protocol clock C at which every compute rank stops, so that the
// memory ranks merge exactly the clocks < C of every compute rank and a
// checkpoint of clock C is consistent. C is never below a clock some rank
// already trains, so every rank can reach it and none is past it.
//
// Two ways to agree, chosen by the bootstrap:
//  - Ranks as threads of one process (in-process bootstrap): a shared board.
//    At the top of each clock t a compute rank, under the board's lock,
//    stops if a decision says C <= t; else, if a stop was asked for, decides
//    C = the largest clock any compute rank is committed to (t included);
//    else commits to t + 1 (t + 2 for a rank that commits ahead:
//    set_commits_ahead). Nobody blocks, so the run up to C is the run
//    without the stop (deterministic emulation stays deterministic).
//  - Ranks as processes (MPI): one collective (AllReduceMax) per run
//    that every rank joins exactly once, with the clocks it is committed to
//    (memory ranks 0): as soon as it sees the request at a clock boundary,
//    inside a wait (WaitOptions::while_waiting: a rank blocked on a peer
//    that already joined must join too, or both wait for ever) or in the
//    memory rank's poll loop; or at the end of the run (compute ranks
//    after Finish, memory ranks once every compute rank finished). Lockstep
//    modes (no memory ranks) instead agree at the top of every clock.
// A stop agreed at the run's last clock is no stop: the run completes.
//
// Runs with faults.dead_after_seconds do not agree (a dead rank would leave
// the collective waiting): their signals keep the default action.
//
// Thread-safety: one StopAgreement per rank, used by that rank's thread
// (the board is shared and locked). The bootstrap and the simulated clock,
// if any, must outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "framework/core/status.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/rank_time.h"

namespace stalelearn::runtime {

struct StopDecision {
  int signal = 0;          // what asked for the stop (stop_request.h)
  std::int64_t clock = 0;  // every compute rank stops before this protocol clock
};

class StopBoard;  // stop_agreement.cc: the threads' shared board

class StopAgreement {
 public:
  enum class Kind {
    kOff,         // never agrees (runs that survive a dead rank)
    kOnRequest,   // modes with memory ranks
    kEveryClock,  // lockstep modes (no memory ranks)
  };
  // `compute_ranks`: how many compute ranks the run has.
  // `progress` (the rank's transport) is called while the processes'
  // collective waits: peers' one-sided operations may need it; `time`: the
  // rank's time service (the collective runs outside its schedule), which
  // must outlive the agreement; `timeout`: how long that collective may wait.
  StopAgreement(transport::Bootstrap& bootstrap, std::function<void()> progress, transport::RankTime& time,
                Kind kind, int compute_ranks, std::chrono::nanoseconds timeout);
  // debug.stop_at_clock: this compute rank asks for a stop (as SIGTERM) when
  // it reaches `clock` in StopsBefore (at a clock's top).
  // Every compute rank is given it, as a signal reaches every rank: the
  // first to arrive decides, so a stop planted at a clock stops there
  // whichever rank reaches it first (one rank alone would find the others
  // committed past it when it came last).
  // `only_rank` >= 0 (debug.stop_rank): only that compute rank asks, so the
  // request can land after the others passed `clock`.
  void set_request_at_clock(std::int64_t clock, int only_rank = -1) {
    request_at_clock_ = clock;
    request_rank_ = only_rank;
  }
  // This rank asks for a stop (`signal`: what the decision will name, e.g.
  // kEarlyStopRequest), without touching the process-wide request, so a
  // later run in the same process starts clean. Ranks as threads: every
  // rank sees it at its next clock top. Processes: the bootstrap announces
  // it (Bootstrap::Announce), and every other rank joins the agreement when
  // it sees the announcement: at its next clock top, in a wait, or in the
  // memory rank's loop. Not in runs without an agreement (kOff).
  Status RequestLocal(int signal);
  // Processes: whether some rank may announce a request (early stopping is
  // on); only then does this rank probe for announcements. Default: off, so
  // a run that never announces pays no probe per clock.
  void set_hears_announcements(bool on) { hears_announcements_ = on; }
  bool in_threads() const { return board_ != nullptr; }
  // A compute rank, before Begin: its pushes may keep deltas back past
  // a clock (ssp_mode.cc kept_tables_), and it pushes all of them once it
  // knows a stop is decided. It commits one clock further than it trains,
  // so every stop is decided before the push of the last clock any rank
  // trains (a push after that clock's would not be waited for).
  void set_commits_ahead() { ahead_ = 1; }
  ~StopAgreement();

  // After the start barrier, on every rank.
  void Open();
  // Compute rank `rank`, at the top of `clock`:
  // true when it must stop there. Before its first clock, `clock` is the
  // first it will train.
  Result<bool> StopsBefore(int rank, std::int64_t clock);
  // Compute ranks, before the first clock: the first clock they will train.
  void Begin(int rank, std::int64_t first_clock);
  // Processes only: joins when a stop was asked for and this rank has not
  // joined (waits, the memory rank's loop; one atomic load otherwise), or
  // unconditionally at the end of the run (`end`: the clock the run ends
  // before; memory ranks pass 0).
  Status Poll();
  Status JoinAtEnd(std::int64_t end);

  // The stop every rank agreed on, once decided; nullopt while undecided or
  // when there was none.
  std::optional<StopDecision> stop() const;

 private:
  Status Join(std::int64_t committed);
  int Requested() const;  // the process-wide request, else this rank's own, else one announced
  // Processes: reads announcements (an MPI probe), at most every
  // kPollsPerProbe-th call unless `now`.
  Status HearAnnouncements(bool now);

  transport::Bootstrap& bootstrap_;
  std::function<void()> progress_;
  transport::RankTime& time_;  // the rank's time service
  std::chrono::nanoseconds timeout_;
  Kind kind_;
  std::shared_ptr<StopBoard> board_;  // ranks as threads; null for processes
  bool open_ = false;                 // processes: between Open and this rank's join
  std::int64_t committed_ = 0;
  int ahead_ = 0;                      // set_commits_ahead: 1
  std::int64_t request_at_clock_ = 0;  // 0: none
  int request_rank_ = -1;              // the compute rank that asks at request_at_clock_; -1: every one
  int local_request_ = 0;              // RequestLocal's signal; 0: none
  bool hears_announcements_ = false;
  int announced_request_ = 0;          // processes: another rank's RequestLocal; 0: none
  static constexpr int kPollsPerProbe = 64;  // waits poll every few microseconds; a probe costs ~0.3 us
  int polls_since_probe_ = 0;
  std::optional<StopDecision> stop_;   // processes: the collective's result
};

}  // namespace stalelearn::runtime
