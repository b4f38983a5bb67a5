#include "framework/runtime/phase_times.h"

namespace stalelearn::runtime {

std::string_view PhaseName(LoopPhase phase) {
  switch (phase) {
    case LoopPhase::kHandOver: return "hand_over";
    case LoopPhase::kGateRefresh: return "gate_refresh";
    case LoopPhase::kKernel: return "kernel";
    case LoopPhase::kPush: return "push";
    case LoopPhase::kEvaluate: return "evaluate";
    case LoopPhase::kFinish: return "finish";
    case LoopPhase::kFinalRead: return "final_read";
    case LoopPhase::kCount: break;
  }
  return "unknown";
}

transport::TimeBreakdown PhaseTimes::SimulatedNow() const {
  if (!simulated_) return {};
  return time_.Summary()->breakdown;
}

void PhaseTimes::End(LoopPhase phase, std::chrono::steady_clock::time_point wall_from,
                     const transport::TimeBreakdown& from, std::int64_t get_from, std::int64_t put_from) {
  PhaseTotal& t = totals_[static_cast<std::size_t>(phase)];
  ++t.entries;
  t.bytes_get += counting_.bytes_get() - get_from;
  t.bytes_put += counting_.bytes_put() - put_from;
  t.wall += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - wall_from);
  if (!simulated_) return;
  const transport::TimeBreakdown now = SimulatedNow();
  t.simulated.compute += now.compute - from.compute;
  t.simulated.transfer += now.transfer - from.transfer;
  t.simulated.merge += now.merge - from.merge;
  t.simulated.wait += now.wait - from.wait;
}

std::vector<proto::PhaseTime> PhaseTimes::Report() const {
  std::vector<proto::PhaseTime> report;
  for (std::size_t p = 0; p < totals_.size(); ++p) {
    const PhaseTotal& t = totals_[p];
    if (t.entries == 0) continue;
    proto::PhaseTime* out = &report.emplace_back();
    out->set_phase(std::string(PhaseName(static_cast<LoopPhase>(p))));
    out->set_entries(t.entries);
    out->set_wall_seconds(std::chrono::duration<double>(t.wall).count());
    out->set_simulated_compute_seconds(transport::ToSeconds(t.simulated.compute));
    out->set_simulated_transfer_seconds(transport::ToSeconds(t.simulated.transfer));
    out->set_simulated_wait_seconds(transport::ToSeconds(t.simulated.wait));
    out->set_bytes_get(t.bytes_get);
    out->set_bytes_put(t.bytes_put);
  }
  return report;
}

}  // namespace stalelearn::runtime
