// Bootstrap and collectives: the only traffic that is not one-sided RMA (I6).
// Moves opaque bytes (worker addresses, packed keys), and carries the
// ALLREDUCE baseline and the final barrier. Implementations: MPI
// (framework/transport/mpi_bootstrap.cc, the only file that includes mpi.h)
// and in-process (inprocess_bootstrap.h) for ranks as threads.
//
// Threading: every method is called by the rank's own main thread only.
// Collective methods must be called by all ranks in the same order.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "framework/transport/types.h"

namespace stalelearn::transport {

using Bytes = std::vector<std::byte>;

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;

  virtual Rank rank() const = 0;
  virtual int world_size() const = 0;

  // Stores `value` under (this rank, key). Local, non-blocking; visible to
  // Get on other ranks after the next Sync().
  virtual Status Put(std::string_view key, std::span<const std::byte> value) = 0;
  // Returns what `owner` stored under `key` before the last Sync().
  // kNotFound if nothing was stored. Non-blocking.
  virtual Result<Bytes> Get(Rank owner, std::string_view key) = 0;
  // Collective: publishes every Put so far to every rank.
  virtual Status Sync() = 0;

  // Collective: returns every rank's `mine`, indexed by rank. `key` names the
  // exchange and must match on all ranks (checked).
  virtual Result<std::vector<Bytes>> AllGather(std::string_view key, std::span<const std::byte> mine) = 0;
  // Collective: element-wise sum over ranks, in place.
  virtual Status AllReduceSum(std::span<float> values) = 0;
  virtual Status AllReduceSum(std::span<double> values) = 0;
  virtual Status AllReduceMax(std::span<std::int64_t> values) = 0;
  // Collective AllReduceMax that calls `progress` while it waits for the
  // other ranks (a rank that peers' one-sided operations need to progress,
  // e.g. over UCX tcp, must not stop progressing inside it), and gives up
  // with kTimeout after `timeout`. Default: AllReduceMax (ranks as threads
  // progress without help).
  virtual Status AllReduceMaxProgressing(std::span<std::int64_t> values, const std::function<void()>& progress,
                                         std::chrono::nanoseconds timeout) {
    (void)progress;
    (void)timeout;
    return AllReduceMax(values);
  }
  // Collective.
  virtual Status Barrier() = 0;

  // A word every other rank may read without a collective: Announce sends
  // `value` (non-zero) to every other rank and returns at once; Announced
  // returns the first value another rank announced that has arrived (0:
  // none yet), without blocking. For a request only one rank sees (a stop after an
  // evaluation) that every rank must act on at its next clock. Not for runs
  // that survive a dead rank. Defaults: kUnimplemented; 0 (ranks as threads
  // share memory and need neither).
  virtual Status Announce(std::int64_t value) {
    (void)value;
    return Unimplemented("this bootstrap cannot announce");
  }
  virtual Result<std::int64_t> Announced() { return std::int64_t{0}; }

  // Small messages to one rank without a collective: SendMessage queues
  // `bytes` for rank `to` and returns at once (MPI: a message of a few
  // hundred bytes goes eagerly, so the send completes without the receiver);
  // ReceiveMessages returns, without blocking, every message that arrived
  // for this rank since the last call, each sender's in the order it sent
  // them. For what one rank must learn from the others at points that are
  // not collective (the parts of an evaluation, early_stopping.h). Not for
  // runs that survive a dead rank. Defaults: kUnimplemented.
  virtual Status SendMessage(Rank to, std::span<const std::byte> bytes) {
    (void)to;
    (void)bytes;
    return Unimplemented("this bootstrap cannot send messages");
  }
  virtual Result<std::vector<Bytes>> ReceiveMessages() {
    return Unimplemented("this bootstrap cannot receive messages");
  }

  // Surviving a dead rank (faults.dead_after_seconds). PrepareForRankLoss is
  // collective and runs before anything can die (MPI: one communicator
  // without each rank, made in advance: OpenMPI 4.1 has no ULFM). After rank
  // `dead` died, every survivor calls ExcludeDeadRank(dead) before its next
  // collective; from then on collectives run among the survivors and
  // AllGather leaves `dead`'s entry empty. One dead rank at most. Defaults:
  // nothing to prepare; kUnimplemented.
  virtual Status PrepareForRankLoss() { return Status::Ok(); }
  virtual Status ExcludeDeadRank(Rank dead) {
    (void)dead;
    return Unimplemented("this bootstrap cannot go on without a dead rank");
  }
};

}  // namespace stalelearn::transport
