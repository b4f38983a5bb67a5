// The links of ranks whose hosts each have one link to the network (a star,
// as in the namespace box: backend.timing.shared_ports). Without it a
// transfer is priced as if it had a path of its own; with it, rank m's link
// carries, one after another,
//   out: the bytes every reader gets from m (two compute ranks refreshing
//        from one memory rank share its bandwidth);
//   in:  the bytes every writer puts to m (their batches queue at m's port),
//        and a get's request to m waits behind what is queued there.
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
  explicit ServingLinks(int world_size)
      : free_at_(static_cast<std::size_t>(world_size)), in_free_at_(static_cast<std::size_t>(world_size)) {}

  // Rank `server` sends `serialization` worth of bytes whose request reached
  // its port at `earliest`: when they start leaving. The request goes in
  // behind what is queued at the port, the reply out after whatever the
  // server sends already. A server outside the world: `earliest`, nothing
  // reserved.
  transport::VirtualTime Reserve(int server, transport::VirtualTime earliest,
                                 transport::VirtualDuration serialization) {
    if (server < 0 || server >= static_cast<int>(free_at_.size())) return earliest;
    std::lock_guard lock(mutex_);
    const auto s = static_cast<std::size_t>(server);
    const transport::VirtualTime start = std::max({earliest, in_free_at_[s], free_at_[s]});
    free_at_[s] = start + serialization;
    return start;
  }

  // A put's bytes to `target`, whose first byte reaches its port at
  // `first_at`: when the last is in (they pass behind what is queued there;
  // alone: first_at + serialization). Arrive reserves the port until then,
  // ArrivalAt only asks (a writer's stamp, just before its put).
  transport::VirtualTime Arrive(int target, transport::VirtualTime first_at, transport::VirtualDuration serialization) {
    if (target < 0 || target >= static_cast<int>(in_free_at_.size())) return first_at + serialization;
    std::lock_guard lock(mutex_);
    transport::VirtualTime& free_at = in_free_at_[static_cast<std::size_t>(target)];
    free_at = std::max(first_at, free_at) + serialization;
    return free_at;
  }
  transport::VirtualTime ArrivalAt(int target, transport::VirtualTime first_at,
                                   transport::VirtualDuration serialization) const {
    if (target < 0 || target >= static_cast<int>(in_free_at_.size())) return first_at + serialization;
    std::lock_guard lock(mutex_);
    return std::max(first_at, in_free_at_[static_cast<std::size_t>(target)]) + serialization;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<transport::VirtualTime> free_at_;     // out of each rank's port
  std::vector<transport::VirtualTime> in_free_at_;  // into each rank's port
};

}  // namespace stalelearn::backends::timing
