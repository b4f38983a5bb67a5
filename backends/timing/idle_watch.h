// What an idle rank's last poll read from other ranks' memory, kept so that
// the virtual-time scheduler can tell whether a segment of another rank
// changed it (VirtualTimeScheduler::Watch).
//
// Why: a waiting rank polls registered memory (a clock table, a ring's
// consumer count, a seqlock word) and goes idle when it found nothing. A
// memory rank ends a segment at every batch it merges, and each of them
// wrote its own memory, so every compute rank polling it was woken, polled
// again, and went back to sleep: a 64:8 run handed out ~1,600 turns per rank
// and clock, almost all such wake-ups, and spent most of its time switching
// threads. A rank whose remote reads still hold the bytes it saw would poll
// the same thing again and find nothing, so it stays asleep.
//
//   watch.Record(src, offset, bytes, dst);  // after each Get that completed
//   scheduler.IdleUntilProgress(rank, wrote, read, watch.usable() ? &watch : nullptr);
//   watch.Reset();                          // when the rank runs again
//
// Only reads through the transport are seen: a segment that wrote the idle
// rank's own memory always wakes it (its poll may read that memory directly),
// and so does one after which a recorded range can no longer be read. The
// watch records at most kMaxBytes; a poll that read more gives up watching.
//
// Needs an inner transport whose Get completes on return and may run on any
// thread (transport::Capabilities::completes_on_return): Unchanged runs on
// the thread of the rank that ended a segment, while the owner is idle.
//
// Thread-safety: Record and Reset on the owning rank's thread; Unchanged on
// any thread while the owner is blocked in the scheduler (the scheduler's
// mutex orders them). Lifetime: holds shared references to the remote
// regions it recorded, so the caller may drop its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/timing/virtual_time_scheduler.h"
#include "framework/transport/transport.h"

namespace stalelearn::backends::timing {

class IdleWatch final : public VirtualTimeScheduler::Watch {
 public:
  static constexpr std::size_t kMaxBytes = 64 * 1024;

  // `inner`: the transport whose Gets are re-issued; must outlive the watch.
  explicit IdleWatch(transport::Transport& inner) : inner_(inner) {}

  // A completed Get of `bytes` at `offset` of `src` that delivered `seen`.
  void Record(std::shared_ptr<const transport::RemoteRegion> src, std::uint64_t offset, std::size_t bytes,
              const void* seen);
  // Something was read that cannot be re-read (an atomic's result, a Get
  // that does not complete on return): no watching until the next Reset.
  void GiveUp() { gave_up_ = true; }
  void Reset();
  // Whether the recorded reads describe the poll completely.
  bool usable() const { return !gave_up_ && !reads_.empty(); }

  bool Unchanged() override;

 private:
  struct Read {
    std::shared_ptr<const transport::RemoteRegion> src;
    std::uint64_t offset;
    std::size_t first;  // into seen_
    std::size_t bytes;
  };
  transport::Transport& inner_;
  std::vector<Read> reads_;
  std::vector<std::byte> seen_;     // the bytes each read delivered, back to back
  std::vector<std::byte> scratch_;  // Unchanged's re-read
  bool gave_up_ = false;
};

}  // namespace stalelearn::backends::timing
