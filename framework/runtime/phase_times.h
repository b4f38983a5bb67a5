// Where a compute rank's time goes, phase by phase of the clock loop
// (clock_loop.h): wall seconds always, and under the timing backend the
// simulated compute, transfer and wait seconds each phase added to the
// rank's virtual clock (TimeBreakdown deltas), and the bytes its gets and
// puts moved (the counting transport's deltas: gets issued in a phase count
// there, whenever they complete). The report's `phases`
// (docs/guide/report.md) carries them, so a run at scale shows what bounds
// it (the stripe hand-overs, the pushes, the final read) without a profiler.
//
//   PhaseTimes phases(*env.wait.time, env.transport);
//   { const PhaseTimes::Scope timed = phases.Time(LoopPhase::kPush); mode.AfterClock(...); }
//   result.phases = phases.Report();
//
// Not thread-safe: the compute rank's main thread (the byte counts are the
// transport's, relaxed atomics). The RankTime and the transport must outlive
// it and its scopes; a scope must end before the next begins (phases do not
// nest).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "framework/metrics/counting_transport.h"
#include "framework/proto/report.pb.h"
#include "framework/transport/rank_time.h"

namespace stalelearn::runtime {

// In the order a clock meets them (the report lists them so).
enum class LoopPhase : int {
  kHandOver,     // a stratified stripe change: wait for the stripe's writer, load it (mode.FocusRows)
  kGateRefresh,  // mode.BeforeClock: the staleness gate and the refresh, or the rows a clock fetches
  kKernel,       // the app's kernel and its charged compute (straggler included)
  kPush,         // mode.AfterClock: sending the clock's deltas (and what a mode waits for there)
  kEvaluate,     // evaluations during the run: the model read and the app's evaluation
  kFinish,       // mode.Finish and joining the stop agreement at the end
  kFinalRead,    // reading the final model (the evaluating ranks)
  kCount,
};
std::string_view PhaseName(LoopPhase phase);

struct PhaseTotal {
  std::int64_t entries = 0;
  std::chrono::nanoseconds wall{0};
  transport::TimeBreakdown simulated;  // zero in real time
  std::int64_t bytes_get = 0;
  std::int64_t bytes_put = 0;
};

class PhaseTimes {
 public:
  PhaseTimes(const transport::RankTime& time, const metrics::CountingTransport& counting)
      : time_(time), counting_(counting), simulated_(time.Summary().has_value()) {}

  class Scope {
   public:
    ~Scope() { owner_.End(phase_, wall_from_, simulated_from_, get_from_, put_from_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    friend class PhaseTimes;
    Scope(PhaseTimes& owner, LoopPhase phase)
        : owner_(owner), phase_(phase), wall_from_(std::chrono::steady_clock::now()),
          simulated_from_(owner.SimulatedNow()), get_from_(owner.counting_.bytes_get()),
          put_from_(owner.counting_.bytes_put()) {}
    PhaseTimes& owner_;
    LoopPhase phase_;
    std::chrono::steady_clock::time_point wall_from_;
    transport::TimeBreakdown simulated_from_;
    std::int64_t get_from_;
    std::int64_t put_from_;
  };
  // Times `phase` until the returned scope ends.
  [[nodiscard]] Scope Time(LoopPhase phase) { return Scope(*this, phase); }

  // One PhaseTime per phase entered at least once, in LoopPhase order.
  std::vector<proto::PhaseTime> Report() const;

 private:
  transport::TimeBreakdown SimulatedNow() const;
  void End(LoopPhase phase, std::chrono::steady_clock::time_point wall_from, const transport::TimeBreakdown& from,
           std::int64_t get_from, std::int64_t put_from);

  const transport::RankTime& time_;
  const metrics::CountingTransport& counting_;
  bool simulated_;
  std::array<PhaseTotal, static_cast<std::size_t>(LoopPhase::kCount)> totals_{};
};

}  // namespace stalelearn::runtime
