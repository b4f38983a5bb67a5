// Optional interface a transport implements when it simulates time (the
// hardware-timing backend, backends/timing/README.md): the runtime charges each compute rank's
// kernel work once per clock, and each memory rank's merge work per batch, so
// the backend can advance that rank's virtual clock. Real backends do not
// implement it and nothing is charged.
//
//   class TimingTransport : public Transport, public runtime::ComputeCostSink {...};
//
// Called from the rank's own thread only.
#pragma once

#include "framework/metrics/work_counters.h"
#include "framework/transport/transport.h"

namespace stalelearn::runtime {

class ComputeCostSink {
 public:
  virtual ~ComputeCostSink() = default;
  // Work of one clock (or DIRECT mini-batch) of this compute rank's kernels.
  virtual void ChargeCompute(const metrics::WorkCounters& work) = 0;
  // Work of merging one batch on this memory rank.
  virtual void ChargeMerge(const metrics::WorkCounters& work) = 0;
};

// The sink `transport` offers, or nullptr.
inline ComputeCostSink* FindComputeCostSink(transport::Transport& transport) {
  return dynamic_cast<ComputeCostSink*>(&transport);
}

}  // namespace stalelearn::runtime
