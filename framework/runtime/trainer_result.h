// What a compute rank's trainer returns: its counters, the per-clock record
// (I1 tests read it), and on the evaluating rank the learning curve.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/proto/report.pb.h"
#include "framework/runtime/locality_plan.h"
#include "framework/runtime/rank_env.h"

namespace stalelearn::runtime {

struct TrainerResult {
  std::int64_t samples = 0;
  std::int64_t clocks = 0;
  double stall_seconds = 0;
  std::int64_t max_observed_staleness = 0;
  std::vector<ClockRecord> records;
  std::vector<proto::CurvePoint> curve;  // evaluating rank only
  LocalityPlanStats plan;                // the compute rank's locality plan
  double train_seconds = 0;              // the clock loop's wall seconds, evaluations left out (report.proto)
  std::int64_t end_clock = 0;            // the protocol clock the run stopped before (its total unless stopped)
  double refresh_cpu_seconds = 0;        // thread CPU of refreshes (report.proto)
  std::int64_t rows_refreshed = 0;       // rows they installed
  std::int64_t meta_only_reads = 0;      // snapshot reads of a meta alone (report.proto)
  std::int64_t stratum_clocks = 0;       // clocks started without a gate (report.proto)
  std::int64_t stripes_read_ahead = 0;   // stripe loads read ahead (report.proto)
  std::int64_t stripes_read_ahead_unsettled = 0;  // of them, begun before their writer was done
  std::int64_t stripes_read_ahead_dropped = 0;    // reads ahead never used (report.proto)
  std::vector<proto::PhaseTime> phases;  // where the loop's time went (phase_times.h)
  double simulated_training_end = 0;     // the virtual clock after the loop's finish (timing backend; report.proto)

  void Add(const ClockRecord& record) {
    ++clocks;
    stall_seconds += record.stall_seconds;
    refresh_cpu_seconds += record.refresh_cpu_seconds;
    rows_refreshed += record.rows_refreshed;
    meta_only_reads += record.meta_only_reads;
    stripes_read_ahead += record.stripes_read_ahead;
    stripes_read_ahead_unsettled += record.stripes_read_ahead_unsettled;
    stripes_read_ahead_dropped += record.stripes_read_ahead_dropped;
    stratum_clocks += record.in_stratum ? 1 : 0;
    if (record.observed_staleness > max_observed_staleness) max_observed_staleness = record.observed_staleness;
    records.push_back(record);
  }
};

}  // namespace stalelearn::runtime
