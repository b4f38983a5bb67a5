// A stratified compute rank's read ahead of its next stripe (ssp_mode.cc):
// the range the next hand-over (FocusRows) will load, and when its read may
// begin. The stripe rests until this rank takes it; its last writer's last
// push went out a sub-epoch before when that rank keeps pace. The mode asks
// from the stratum's first clock on (a push waits for no flush, so the
// read's gets delay no push), at gaps that double while the writer is not
// done (each ask is a round trip), and the read begins at the first ask that
// finds the writer done with the stripe: its gets go out after the clock's
// puts and arrive while the kernel runs the rest of the stratum, and
// FocusRows lays on them what was published since
// (ReplicaRefresher::PrefetchRows). Begun before the writer is done, the
// read would get the stripe and then most of it again as the writer's last
// records (a lagging writer gave a rank up to 5 stripes of them an epoch at
// 3:1 in real time). If the writer is not done by the stratum's end, the
// hand-over reads the stripe once, settled, and the range is forgotten.
//
// Not thread-safe: the compute rank's main thread. Holds no references.
#pragma once

#include <cstdint>
#include <optional>
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
  // The range the next FocusRows will load, with its `writer_before` and
  // `settled_before` as FocusRows will get them (ConsistencyMode::PrefetchFocus).
  void Name(model::TableId table, std::int64_t first, std::int64_t last, model::ComputeIndex writer_before,
            std::int64_t settled_before) {
    next_ = Next{table, first, last, writer_before, settled_before, {}};
  }
  bool named() const { return next_.has_value(); }
  // A named range whose read never began: its hand-over loads it instead.
  void Forget() { next_.reset(); }

  // Polls the merged clocks of the memory ranks holding the named range
  // (ClockTable::RefreshOnly: a poll advances a virtual clock to what it
  // read, so it reads no other rank's) and, if the writer before it (every
  // other rank where writer_before is -1) has merged its clocks before
  // settled_before there, begins the range's read and forgets the name.
  // Needs named().
  Status BeginIfWriterDone(sync::ClockTable& clocks, const model::ModelLayout& layout, model::ComputeIndex me,
                           ReplicaRefresher& refresher);

 private:
  struct Next {
    model::TableId table;
    std::int64_t first, last;
    model::ComputeIndex writer_before;
    std::int64_t settled_before;
    std::vector<std::uint8_t> shards;  // [memory rank]: 1 = holds rows of the range (once polled)
  };
  std::optional<Next> next_;
};

}  // namespace stalelearn::runtime
