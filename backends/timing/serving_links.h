// The links ranks serve reads over, when each rank's host has one link to
// the network (a star, as in the namespace box: backend.timing.shared_ports).
// Without it a get is priced as if its reader had a path of its own to the
// data; with it, the bytes every reader gets from rank m leave m one after
// another over m's link, so two compute ranks refreshing from one memory
// rank share its bandwidth.
//
// Thread-safe (one mutex): every TimingTransport of an in-process job holds
// the same instance (the in-process group's shared objects). Reservations
// come in the virtual-time scheduler's turn order, so runs stay
// deterministic.
#pragma once

#include <algorithm>
#include <mutex>
#include <vector>

#include "framework/transport/virtual_time.h"

namespace stalelearn::backends::timing {

class ServingLinks {
 public:
  explicit ServingLinks(int world_size) : free_at_(static_cast<std::size_t>(world_size)) {}

  // Rank `server` sends `serialization` worth of bytes whose request reached
  // it at `earliest`: when they start leaving (after whatever it sends
  // already). A server outside the world: `earliest`, nothing reserved.
  transport::VirtualTime Reserve(int server, transport::VirtualTime earliest,
                                 transport::VirtualDuration serialization) {
    if (server < 0 || server >= static_cast<int>(free_at_.size())) return earliest;
    std::lock_guard lock(mutex_);
    transport::VirtualTime& free_at = free_at_[static_cast<std::size_t>(server)];
    const transport::VirtualTime start = std::max(earliest, free_at);
    free_at = start + serialization;
    return start;
  }

 private:
  std::mutex mutex_;
  std::vector<transport::VirtualTime> free_at_;
};

}  // namespace stalelearn::backends::timing
