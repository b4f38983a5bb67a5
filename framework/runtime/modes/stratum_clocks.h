// Which clocks of a stratified sub-epoch (a stratum: the clocks between two
// FocusRows of one rank) push, and after which the rank asks whether its
// next stripe's writer is done (stripe_hand_over.h).
//
// Pushes: inside a stratum no other rank reads this rank's rows before the
// stripe moves (the stripe: after the next rank's FocusRows, which waits
// for this rank's clocks before it; a table written alone: never, so its
// deltas wait longer, until the epoch's last clock; a refresh never
// installs over them, ReplicaRefresher::InstallRow). So a clock's deltas may
// wait in the replica and go out with a later clock's (a batch's clock says
// every clock up to it is in): kPushesPerStratum pushes, always at the
// stratum's last clock (and before a checkpoint's cut or a stop, which the
// mode decides). Each push costs two puts per memory rank it has deltas
// for, and the last reaches every memory rank (its clocks are in
// everywhere); the last push's merge is what the rank taking the stripe two
// sub-epochs later waits for, so a stratum is cut into a few pushes rather
// than one (8 beat 1 and one a clock at 4:1 and 64:8 on the timing backend
// with a stripe per rank; with two, strata are half as long and 4 beat 8;
// with the rows written alone kept back, pushes hold only the stripe's rows
// and 2 beat 4 and 1: docs/measurements.md).
//
// Asks (stripe_read_ahead.h): from the stratum's first clock (a push waits
// for no flush, so the read's gets delay nothing), then after gaps that
// double while the writer is not done, up to an eighth of the clocks between
// pushes: each ask is a round trip, so a lagging writer costs a stratum a
// few, not one a clock.
//
// Value type; not thread-safe (the compute rank's main thread).
#pragma once

#include <algorithm>
#include <cstdint>

namespace stalelearn::runtime {

class StratumClocks {
 public:
  static constexpr std::int64_t kPushesPerStratum = 2;

  // A stratum of clocks [first, until) begins.
  void Begin(std::int64_t first, std::int64_t until) {
    begin_ = first;
    until_ = until;
    ask_at_ = first;
    ask_gap_ = 1;
  }

  // Whether the deltas of `clock` (and the clocks held before it) go out.
  bool PushDue(std::int64_t clock) const { return Ends(clock) || (clock + 1 - begin_) % PushEvery() == 0; }
  // Whether `clock` is the stratum's last.
  bool Ends(std::int64_t clock) const { return clock + 1 >= until_; }
  // Whether to ask, after `clock`, if the next stripe's writer is done.
  bool AskDue(std::int64_t clock) const { return clock + 1 < until_ && clock >= ask_at_; }
  // Whether `clock` is the last after which a rank asks (the stratum's last but one).
  bool LastAsk(std::int64_t clock) const { return clock + 2 == until_; }
  // The rank asked after `clock` (and the writer was not done, or the read
  // began and nobody asks again): the next ask waits a longer gap.
  void Asked(std::int64_t clock) {
    ask_at_ = clock + ask_gap_;
    ask_gap_ = std::min(2 * ask_gap_, std::max<std::int64_t>(1, PushEvery() / 8));
  }

 private:
  std::int64_t PushEvery() const {
    return std::max<std::int64_t>(1, (until_ - begin_ + kPushesPerStratum - 1) / kPushesPerStratum);
  }

  std::int64_t begin_ = 0;   // the stratum's first clock
  std::int64_t until_ = 0;   // and the clock the next stratum begins at
  std::int64_t ask_at_ = 0;  // the first clock after which AskDue holds again
  std::int64_t ask_gap_ = 1;  // clocks from an ask to the one after it
};

}  // namespace stalelearn::runtime
