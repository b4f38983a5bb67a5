// A stratified SSP rank's stripe moves (modes/ssp_mode.cc): the hand-over
// that loads the rank's next stripe of the shared table, the load of the
// stripe after it begun ahead, and the clocks of the stratum between two
// hand-overs (StratumClocks: when to push, when to ask).
//
// The next stripe rests until this rank takes it, and its last writer may
// still be finishing it. Where the replica holds at most half of it, the
// rank asks the memory ranks for its rows at once and each answers once
// the writer is done there (ReplicaRefresher::PrefetchGathered,
// sync::kAwaitsClocks): the hand-over then waits for the replies alone.
// Otherwise the stripe is read whole, begun once an ask finds the writer
// done (StripeReadAhead), and the hand-over waits for the writer's clocks
// and for this rank's own deltas of the stripe to be merged, then finishes
// the read. Not a barrier over all ranks (DSGD's bulk-synchronous
// sub-epochs): a rank slow in one block delays only the rank that takes
// its stripe next, and slow and fast blocks even out along the chain of
// hand-overs instead of every sub-epoch waiting for its slowest.
//
// Not thread-safe: the compute rank's main thread. `env`, `links` and
// `replica` outlive it; Finish before the links go.
#pragma once

#include <cstdint>

#include "framework/core/status.h"
#include "framework/model/rank_index.h"
#include "framework/model/replica.h"
#include "framework/runtime/compute_links.h"
#include "framework/runtime/modes/stratum_clocks.h"
#include "framework/runtime/rank_env.h"
#include "framework/runtime/stripe_read_ahead.h"

namespace stalelearn::runtime {

class StripeHandOver {
 public:
  StripeHandOver(const RankEnv& env, model::ComputeIndex me, ComputeLinks& links, model::Replica& replica)
      : env_(env), me_(me), links_(links), replica_(replica), read_ahead_(links.clocks.Twin()) {}

  // ConsistencyMode::FocusRows: loads rows [first, last) of `table` into
  // the replica once they hold this rank's own deltas of them and the
  // clocks before `settled_before` of `writer_before` (the range's last
  // writer, which waited in turn for its own: -1, every other rank), so no
  // refresh of the stratum until `until` needs the range's change records.
  // Adds its wait to record.stall_seconds and its reads ahead to the record.
  Status FocusRows(model::TableId table, std::int64_t first, std::int64_t last, std::int64_t until,
                   model::ComputeIndex writer_before, std::int64_t settled_before, ClockRecord& record);
  // ConsistencyMode::PrefetchFocus: the range the next FocusRows will name,
  // asked for at once where gathered, else named for a read ahead.
  Status PrefetchFocus(model::TableId table, std::int64_t first, std::int64_t last, model::ComputeIndex writer_before,
                       std::int64_t settled_before);
  // After each clock's push (or held push): reads gathered replies ahead,
  // takes an ask's answer if it is in, and asks again when StratumClocks says.
  Status AfterClock(std::int64_t clock, const ClockRecord& record);
  // At the run's end or a stop: nothing begun is left in flight.
  Status Finish();

  const StratumClocks& stratum() const { return stratum_; }

 private:
  // FocusRows' wait: own deltas of the range merged and the range's writer
  // done with it, on the memory ranks holding it.
  Status AwaitWriterDone(model::TableId table, std::int64_t first, std::int64_t last, model::ComputeIndex writer_before,
                         std::int64_t settled_before, ClockRecord& record);

  const RankEnv& env_;
  model::ComputeIndex me_;
  ComputeLinks& links_;
  model::Replica& replica_;
  StratumClocks stratum_;       // the last FocusRows' stratum: its pushes and asks
  StripeReadAhead read_ahead_;  // a whole range PrefetchFocus named, until its read begins
};

}  // namespace stalelearn::runtime
