// The one-sided transport: the data plane of stalelearn (framework/README.md,
// "The transport contract"; invariants I3, I6, I7).
//
//   auto region = ValueOrThrow(t.Register(1 << 20, Access::kAll));      // target
//   PackedKey key = region->key();             // -> bootstrap store -> origin
//   auto remote = ValueOrThrow(t.Import(target, key));                    // origin
//   auto put = ValueOrThrow(t.Put(target, src, n, *remote, offset));
//   ThrowIfError(t.Fence(target));   // payload ordered before the commit word
//   auto commit = ValueOrThrow(t.AtomicAdd(target, *remote, commit_offset, 1));
//   ThrowIfError(t.Flush(target, 1s));  // everything above complete at the target
//
// Threading: one Transport per rank. Unless a method says otherwise it may be
// called from any thread of its rank concurrently (the UCX backend uses a
// UCS_THREAD_MODE_MULTI worker). Regions and remote regions must not outlive
// the Transport that made them; Requests must be completed or dropped before it.
//
// Buffers: the source of a Put may be reused once its Request completed (or
// after Flush); the destination of a Get and the result of a fetching atomic
// hold the data once their Request completed. Completion of a Put is local
// only; remote visibility needs Flush (deploy/README.md).
//
// Ordering: operations to one peer issued before Fence(peer) are performed at
// the target before operations issued after it. A reader on the target that
// observes a commit word with an acquire load (LoadAcquire64) then sees the
// payload written before the fence.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "framework/core/status.h"
#include "framework/transport/types.h"

namespace stalelearn::transport {

class SimulatedTime;

using Timeout = std::chrono::nanoseconds;

// How this rank reaches one peer, in the backend's own words (UCX: the
// "transport/device" of each lane, e.g. "tcp/eth0" or "posix/memory").
struct PeerTransports {
  Rank peer;
  std::vector<std::string> transports;  // distinct, in lane order
};

// Handle of a non-blocking operation. Not thread-safe: one owner thread.
// Dropping an incomplete Request is allowed; the operation still completes and
// Flush still waits for it, but its result buffer must stay alive until then.
class Request {
 public:
  virtual ~Request() = default;
  // Progresses the transport once and returns true when complete. Non-blocking.
  virtual bool Test() = 0;
  // Blocks (progressing) until complete or `timeout` passes (kTimeout). Returns
  // the operation's own error, if any.
  virtual Status Wait(Timeout timeout) = 0;
};
using RequestPtr = std::unique_ptr<Request>;

// Memory registered on this rank. Owned by its creator; the memory stays valid
// and at a fixed address until destruction. data() may be read and written
// locally by any thread; concurrent remote writes make plain reads racy, so
// shared words are read with LoadAcquire64.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  virtual std::byte* data() = 0;
  virtual std::size_t size() const = 0;
  virtual Access access() const = 0;
  // Opaque key a peer passes to Transport::Import. Non-blocking.
  virtual const PackedKey& key() const = 0;
};

// A peer's region as seen by this rank. Thread-safe to use concurrently.
class RemoteRegion {
 public:
  virtual ~RemoteRegion() = default;
  virtual Rank owner() const = 0;
  virtual std::size_t size() const = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual Rank rank() const = 0;
  virtual int world_size() const = 0;
  virtual Capabilities capabilities() const = 0;
  // The simulated clock when this transport simulates time (the timing
  // backend, framework/transport/virtual_time.h), else nullptr. Decorators
  // forward it. The runtime asks once, for its time service (rank_time.h).
  virtual SimulatedTime* simulated_time() { return nullptr; }
  virtual const char* name() const = 0;

  // Allocates and registers `bytes` (zeroed, 8-byte aligned) with `access`.
  // Blocking; any thread.
  virtual Result<std::unique_ptr<MemoryRegion>> Register(std::size_t bytes, Access access) = 0;
  // Turns a peer's key into a usable remote region. Blocking (may connect).
  virtual Result<std::unique_ptr<RemoteRegion>> Import(Rank owner, std::span<const std::byte> key) = 0;

  // Copies `bytes` from `src` to `dst`+`offset`. Non-blocking.
  virtual Result<RequestPtr> Put(const void* src, std::size_t bytes, const RemoteRegion& dst,
                                 std::uint64_t offset) = 0;
  // Copies `bytes` from `src`+`offset` into `dst`. Non-blocking.
  virtual Result<RequestPtr> Get(void* dst, std::size_t bytes, const RemoteRegion& src,
                                 std::uint64_t offset) = 0;
  // 64-bit atomics on an 8-byte aligned word of a remote region. Non-blocking.
  virtual Result<RequestPtr> AtomicAdd(const RemoteRegion& dst, std::uint64_t offset,
                                       std::uint64_t value) = 0;
  // *old receives the previous value on completion; `old` must stay alive.
  virtual Result<RequestPtr> FetchAdd(const RemoteRegion& dst, std::uint64_t offset,
                                      std::uint64_t value, std::uint64_t* old) = 0;
  // Stores `desired` if the word equals `expected`; *old receives the previous value.
  virtual Result<RequestPtr> CompareSwap(const RemoteRegion& dst, std::uint64_t offset,
                                         std::uint64_t expected, std::uint64_t desired,
                                         std::uint64_t* old) = 0;

  // Orders operations to `peer`: earlier ones are performed at the target
  // before later ones. Non-blocking; does not complete anything.
  virtual Status Fence(Rank peer) = 0;
  // Blocks until every operation issued to `peer` before the call is complete
  // at origin and target.
  virtual Status Flush(Rank peer, Timeout timeout) = 0;
  // Flush to every peer.
  virtual Status FlushAll(Timeout timeout) = 0;
  // Drives communication once. Non-blocking. Targets call it while they wait
  // (Capabilities::target_must_progress).
  virtual void Progress() = 0;

  // The transports of this rank's endpoint to each peer, from the backend's
  // own endpoint information (for the report: a cross-host run that fell back
  // to shared memory shows). Empty when the backend has nothing to tell.
  // Call when no operation is in flight (e.g. after training).
  virtual std::vector<PeerTransports> DescribeEndpoints() const { return {}; }
};

// Acquire load of a 64-bit word that peers write remotely (commit words,
// clocks). `word` must be 8-byte aligned.
std::uint64_t LoadAcquire64(const std::byte* word);
// Release store of a word that peers read remotely.
void StoreRelease64(std::byte* word, std::uint64_t value);

// Convenience wrappers: issue, then wait with `timeout`. Blocking.
Status PutBlocking(Transport& t, const void* src, std::size_t bytes, const RemoteRegion& dst,
                   std::uint64_t offset, Timeout timeout);
Status GetBlocking(Transport& t, void* dst, std::size_t bytes, const RemoteRegion& src,
                   std::uint64_t offset, Timeout timeout);
Result<std::uint64_t> FetchAddBlocking(Transport& t, const RemoteRegion& dst, std::uint64_t offset,
                                       std::uint64_t value, Timeout timeout);
Result<std::uint64_t> CompareSwapBlocking(Transport& t, const RemoteRegion& dst,
                                          std::uint64_t offset, std::uint64_t expected,
                                          std::uint64_t desired, Timeout timeout);

}  // namespace stalelearn::transport
