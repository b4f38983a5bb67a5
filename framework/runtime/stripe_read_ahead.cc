#include "framework/runtime/stripe_read_ahead.h"

#include <utility>

namespace stalelearn::runtime {

Status StripeReadAhead::BeginIfWriterDone(sync::ClockTable& clocks, const model::ModelLayout& layout,
                                          model::ComputeIndex me, ReplicaRefresher& refresher) {
  Next& next = *next_;
  if (next.shards.empty()) next.shards = layout.partition(next.table).ShardsHolding(next.first, next.last);
  STALELEARN_RETURN_IF_ERROR(clocks.RefreshOnly(next.shards));
  const sync::ClockTable::Slowest writer = next.writer_before.value >= 0
                                               ? clocks.SlowestOf(next.writer_before, next.shards)
                                               : clocks.SlowestOther(me, next.shards);
  if (writer.merged_clock < static_cast<std::uint64_t>(next.settled_before)) {
    return Status::Ok();  // the writer is not done with the stripe: asked again later (StratumClocks::AskDue)
  }
  const Next ready = std::move(next);
  next_.reset();
  return refresher.PrefetchRows(ready.table, ready.first, ready.last);
}

}  // namespace stalelearn::runtime
