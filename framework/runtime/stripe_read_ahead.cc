#include "framework/runtime/stripe_read_ahead.h"

#include <utility>

namespace stalelearn::runtime {

Status StripeReadAhead::Ask(const model::ModelLayout& layout) {
  Next& next = *next_;
  if (next.shards.empty()) next.shards = layout.partition(next.table).ShardsHolding(next.first, next.last);
  next.asked = true;
  return clocks_.BeginRefreshOnly(next.shards);
}

Status StripeReadAhead::TakeAnswer(model::ComputeIndex me, ReplicaRefresher& refresher, bool wait) {
  STALELEARN_ASSIGN_OR_RETURN(const bool in, clocks_.TakeRefresh(wait));
  if (!in || !next_.has_value() || !next_->asked) return Status::Ok();
  Next& next = *next_;
  const sync::ClockTable::Slowest writer = next.writer_before.value >= 0
                                               ? clocks_.SlowestOf(next.writer_before, next.shards)
                                               : clocks_.SlowestOther(me, next.shards);
  if (writer.merged_clock < static_cast<std::uint64_t>(next.settled_before)) {
    return Status::Ok();  // the writer is not done with the stripe: asked again later (StratumClocks::AskDue)
  }
  const Next ready = std::move(next);
  next_.reset();
  return refresher.PrefetchRows(ready.table, ready.first, ready.last);
}

}  // namespace stalelearn::runtime
