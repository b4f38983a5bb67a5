#include "framework/runtime/stripe_hand_over.h"

#include <fmt/format.h>

#include <chrono>
#include <string>
#include <vector>

#include "framework/core/planted_defect.h"
#include "framework/sync/wait_until.h"

namespace stalelearn::runtime {

Status StripeHandOver::FocusRows(model::TableId table, std::int64_t first, std::int64_t last, std::int64_t until,
                                 model::ComputeIndex writer_before, std::int64_t settled_before, ClockRecord& record) {
  read_ahead_.Forget();  // a read ahead never begun (its writer was late) is this load: not again later
  STALELEARN_RETURN_IF_ERROR(links_.pusher.Complete());
  if (!links_.refresher.GatheredOnceSettled(table, first, last)) {
    STALELEARN_RETURN_IF_ERROR(AwaitWriterDone(table, first, last, writer_before, settled_before, record));
  }
  const std::uint64_t ahead_before = links_.refresher.counters().loads_read_ahead;
  const std::uint64_t unsettled_before = links_.refresher.counters().loads_read_ahead_unsettled;
  STALELEARN_RETURN_IF_ERROR(
      links_.refresher.FocusRows(table, first, last, static_cast<std::uint64_t>(settled_before), writer_before,
                                 replica_));
  replica_.RebaseWritten();  // the rows FocusRows installed (it notes them)
  record.stripes_read_ahead += static_cast<std::int64_t>(links_.refresher.counters().loads_read_ahead - ahead_before);
  record.stripes_read_ahead_unsettled +=
      static_cast<std::int64_t>(links_.refresher.counters().loads_read_ahead_unsettled - unsettled_before);
  stratum_.Begin(record.clock, until);
  return Status::Ok();
}

// A gathered next stripe is asked for now, and each memory rank answers
// once the stripe's writer is done with it there; a stripe read whole is
// named for the read ahead (AfterClock begins it when its writer is done).
Status StripeHandOver::PrefetchFocus(model::TableId table, std::int64_t first, std::int64_t last,
                                     model::ComputeIndex writer_before, std::int64_t settled_before) {
  const sync::AwaitedClocks awaits{writer_before.value, static_cast<std::uint64_t>(settled_before)};
  STALELEARN_ASSIGN_OR_RETURN(const bool asked, links_.refresher.PrefetchGathered(table, first, last, awaits));
  if (!asked) read_ahead_.Name(table, first, last, writer_before, settled_before);
  return Status::Ok();
}

// The next stripe's read, once its writer is done with it
// (stripe_read_ahead.h): asked after the clocks StratumClocks says, the
// answer looked for after every clock (free until it is in). After the
// stratum's last clock but one, an ask is answered before the rank goes
// on: a stratum shorter than a round trip would else read ahead never.
Status StripeHandOver::AfterClock(std::int64_t clock, const ClockRecord& record) {
  // A gathered next stripe: its replies are read once answered.
  STALELEARN_RETURN_IF_ERROR(links_.refresher.ReadGatherAhead());
  const bool last_chance = record.in_stratum && stratum_.LastAsk(clock);
  if (read_ahead_.asking()) {
    STALELEARN_RETURN_IF_ERROR(read_ahead_.TakeAnswer(me_, links_.refresher, last_chance));
    if (read_ahead_.asking()) return Status::Ok();
    links_.pusher.NoteHeads(read_ahead_.clocks());  // the answer read the rings' heads too
    if (last_chance) return Status::Ok();  // one wait a stratum at most
  }
  if (!record.in_stratum || !read_ahead_.named() || !stratum_.AskDue(clock)) return Status::Ok();
  stratum_.Asked(clock);
  STALELEARN_RETURN_IF_ERROR(read_ahead_.Ask(env_.layout));
  if (!last_chance) return Status::Ok();
  STALELEARN_RETURN_IF_ERROR(read_ahead_.TakeAnswer(me_, links_.refresher, /*wait=*/true));
  links_.pusher.NoteHeads(read_ahead_.clocks());
  return Status::Ok();
}

Status StripeHandOver::Finish() {
  read_ahead_.Forget();
  STALELEARN_RETURN_IF_ERROR(read_ahead_.Settle());  // an ask's get writes into it
  return links_.refresher.DropPrefetch();  // a stop inside a stratum: its gets complete
}

Status StripeHandOver::AwaitWriterDone(model::TableId table, std::int64_t first, std::int64_t last,
                                       model::ComputeIndex writer_before, std::int64_t settled_before,
                                       ClockRecord& record) {
  // The writer's clocks count where the range's rows are merged, as for
  // its read ahead: on the memory ranks holding it. The others merge the
  // writer's last push when they get to it, and nothing read here waits
  // for that (a push to them may even be skipped inside a stratum).
  const std::vector<std::uint8_t> shards = env_.layout.partition(table).ShardsHolding(first, last);
  STALELEARN_ASSIGN_OR_RETURN(
      std::chrono::nanoseconds waited,
      sync::WaitUntil(
          env_.wait, env_.transport,
          [&]() -> Result<bool> {
            STALELEARN_RETURN_IF_ERROR(links_.clocks.Refresh());
            for (int m = 0; m < links_.clocks.memory_ranks(); ++m) {
              const model::MemoryIndex mi{m};
              links_.refresher.DropIncluded(mi, links_.clocks.included(mi, me_));
            }
            if (links_.refresher.PendingNames(table, first, last)) return false;
            if (DefectPlanted(PlantedDefect::kFocusSettledAtOnce)) return true;
            const sync::ClockTable::Slowest slowest = writer_before.value >= 0
                                                          ? links_.clocks.SlowestOf(writer_before, shards)
                                                          : links_.clocks.SlowestOther(me_, shards);
            if (slowest.merged_clock >= static_cast<std::uint64_t>(settled_before)) return true;
            links_.clocks.WaitOnlyFor(slowest);  // a virtual clock sleeps until it moves
            return false;
          },
          [&] {
            return fmt::format("compute rank {}: its deltas of the rows and {} clocks before {} merged, "
                               "before it reads rows {}..{} of table {}",
                               me_.value,
                               writer_before.value >= 0 ? fmt::format("compute rank {}'s", writer_before.value)
                                                        : std::string("every rank's"),
                               settled_before, first, last, table.value);
          }));
  record.stall_seconds += std::chrono::duration<double>(waited).count();
  return Status::Ok();
}

}  // namespace stalelearn::runtime
