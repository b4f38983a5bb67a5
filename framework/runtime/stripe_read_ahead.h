// A stratified compute rank's read ahead of its next stripe (stripe_hand_over.h):
// the range the next hand-over (FocusRows) will load, and when its read may
// begin. The stripe rests until this rank takes it; its last writer's last
// push went out a sub-epoch before when that rank keeps pace. The mode asks
// from the stratum's first clock on (a push waits for no flush, so the
// read's gets delay no push), and the read begins at the first answer that
// finds the writer done with the stripe: its gets go out after the clock's
// puts and arrive while the kernel runs the rest of the stratum, and
// FocusRows lays on them what was published since
// (ReplicaRefresher::PrefetchRows). An ask is a get of the control blocks
// of the memory ranks holding the range, which the rank does not wait for:
// a later clock takes its answer (a round trip each was a third of a 64:8
// rank's pushing on the timing backend) and, if the writer was not done,
// the rank asks again. Begun before the writer is done, the read would get the
// stripe and then most of it again as the writer's last records (a lagging
// writer gave a rank up to 5 stripes of them an epoch at 3:1 in real time).
// If the writer is not done by the stratum's end, the hand-over reads the
// stripe once, settled, and the range is forgotten.
//
// Not thread-safe: the compute rank's main thread. The transport and
// regions of its ClockTable must outlive it; Settle before they go.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "framework/core/status.h"
#include "framework/model/rank_index.h"
#include "framework/model/shard_layout.h"
#include "framework/model/table_spec.h"
#include "framework/runtime/replica_refresher.h"
#include "framework/sync/clock_table.h"

namespace stalelearn::runtime {

class StripeReadAhead {
 public:
  // `clocks`: a table of its own (ClockTable::Twin), whose refresh may stay
  // in flight between asks.
  explicit StripeReadAhead(sync::ClockTable clocks) : clocks_(std::move(clocks)) {}

  // The range the next FocusRows will load, with its `writer_before` and
  // `settled_before` as FocusRows will get them (ConsistencyMode::PrefetchFocus).
  void Name(model::TableId table, std::int64_t first, std::int64_t last, model::ComputeIndex writer_before,
            std::int64_t settled_before) {
    next_ = Next{table, first, last, writer_before, settled_before, {}, false};
  }
  bool named() const { return next_.has_value(); }
  // A named range whose read never began: its hand-over loads it instead.
  void Forget() { next_.reset(); }

  // Whether an ask is in flight (its answer not taken yet).
  bool asking() const { return clocks_.refreshing(); }
  // Asks whether the writer before the named range is done with it: gets
  // the control blocks of the memory ranks holding the range, without
  // waiting (TakeAnswer looks). Needs named() and !asking().
  Status Ask(const model::ModelLayout& layout);
  // Takes the answer to the ask in flight, if it is in (the clock has
  // reached its get's completion; otherwise nothing happens) or, with
  // `wait`, once it is: if the writer before the named range (every other
  // rank where writer_before is -1) has merged its clocks before
  // settled_before on the memory ranks holding it (ClockTable::SlowestOf),
  // begins the range's read and forgets the name. An answer to an ask for
  // another range (named before a hand-over) is dropped. Needs asking().
  Status TakeAnswer(model::ComputeIndex me, ReplicaRefresher& refresher, bool wait = false);
  // The control blocks the last answer taken read (undefined while asking()).
  const sync::ClockTable& clocks() const { return clocks_; }
  // Waits for an ask in flight (its get writes into this object) and forgets it.
  Status Settle() { return clocks_.Settle(); }

 private:
  struct Next {
    model::TableId table;
    std::int64_t first, last;
    model::ComputeIndex writer_before;
    std::int64_t settled_before;
    std::vector<std::uint8_t> shards;  // [memory rank]: 1 = holds rows of the range (once asked)
    bool asked = false;                // the refresh in flight is this range's ask
  };
  std::optional<Next> next_;
  sync::ClockTable clocks_;  // the asks' control blocks (a refresh may be in flight)
};

}  // namespace stalelearn::runtime
