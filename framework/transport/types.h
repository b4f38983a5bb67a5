// Vocabulary types of the one-sided transport: ranks, access rights, keys,
// capabilities. Value types; thread-safe as values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stalelearn::transport {

// A process (or, in emulation, a thread) in the job, 0..world_size-1.
struct Rank {
  int value = -1;
  friend bool operator==(Rank, Rank) = default;
  friend auto operator<=>(Rank, Rank) = default;
};

// Access rights of a registered region (bit set).
enum class Access : std::uint32_t {
  kNone = 0,
  kLocalRead = 1u << 0,
  kLocalWrite = 1u << 1,
  kRemoteRead = 1u << 2,
  kRemoteWrite = 1u << 3,   // put and atomics from peers
  kLocal = kLocalRead | kLocalWrite,
  kRemoteReadOnly = kLocal | kRemoteRead,
  kAll = kLocal | kRemoteRead | kRemoteWrite,
};
constexpr Access operator|(Access a, Access b) {
  return static_cast<Access>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}
constexpr bool HasAccess(Access set, Access wanted) {
  return (static_cast<std::uint32_t>(set) & static_cast<std::uint32_t>(wanted)) ==
         static_cast<std::uint32_t>(wanted);
}

// An exported region key: opaque bytes that travel through the bootstrap store.
using PackedKey = std::vector<std::byte>;

// What a backend guarantees beyond the common contract; the conformance suite
// skips or adapts its checks by these flags (framework/README.md, convention 5).
struct Capabilities {
  // A put or atomic to a region registered without kRemoteWrite is refused
  // with kPermissionDenied (or reported by the backend) instead of landing.
  bool enforces_remote_access = false;
  // Bounds of a remote region are checked at the origin (kOutOfRange).
  bool checks_remote_bounds = false;
  // The target must call Progress() for remote operations to complete (UCX
  // over tcp; software-emulated RMA).
  bool target_must_progress = false;
  // All ranks are threads of one process.
  bool in_process = false;
  // Put and Get are done when the call returns, and Get may be called from
  // any thread of the process (the local backend: a memcpy). The timing
  // backend then re-reads what an idle rank polled to decide whether a write
  // could have ended its wait.
  bool completes_on_return = false;
  // What one more operation costs, in bytes of transfer (its per-operation
  // overhead times the bandwidth): a reader fetching scattered small records
  // merges two into one get when the gap between them costs less, and
  // weighs ways of reading by bytes plus operations times this.
  std::size_t operation_cost_bytes = 2048;
};

}  // namespace stalelearn::transport
