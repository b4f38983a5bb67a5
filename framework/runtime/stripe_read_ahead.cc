#include "framework/runtime/stripe_read_ahead.h"

#include <utility>

namespace stalelearn::runtime {

Status StripeReadAhead::BeginIfWriterDone(sync::ClockTable& clocks, const model::ModelLayout& layout,
                                          model::ComputeIndex me, ReplicaRefresher& refresher) {
  Next& next = *next_;
  if (next.shards.empty()) {
    next.shards.assign(static_cast<std::size_t>(clocks.memory_ranks()), 0);
    const model::RowPartition& partition = layout.partition(next.table);
    for (std::int64_t r = next.first; r < next.last; ++r) next.shards[partition.Owner(model::RowId{r}).value] = 1;
  }
  STALELEARN_RETURN_IF_ERROR(clocks.RefreshOnly(next.shards));
  for (int c = 0; c < clocks.compute_ranks(); ++c) {
    if (next.writer_before.value >= 0 ? c != next.writer_before.value : c == me.value) continue;
    for (std::size_t m = 0; m < next.shards.size(); ++m) {
      if (next.shards[m] != 0 &&
          clocks.merged_clock(model::MemoryIndex{static_cast<int>(m)}, model::ComputeIndex{c}) <
              static_cast<std::uint64_t>(next.settled_before)) {
        return Status::Ok();  // the writer is not done with the stripe: asked again at the next clock
      }
    }
  }
  const Next ready = std::move(next);
  next_.reset();
  return refresher.PrefetchRows(ready.table, ready.first, ready.last);
}

}  // namespace stalelearn::runtime
