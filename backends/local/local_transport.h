// The 'local' backend: ranks are threads of one process and RMA is plain
// memory access. The reference implementation of the transport contract
// (framework/transport/transport.h): every other backend must behave like it
// within its capability flags.
//
// How the contract maps onto one address space:
//   Put/Get       memcpy by the calling thread; complete on return, so every
//                 Request is complete at once. An 8-byte put or get at an
//                 8-byte aligned offset is one release store / acquire load,
//                 so a word written by put can serve as a commit word.
//   atomics       std::atomic_ref<std::uint64_t>, acq_rel.
//   Fence         release fence: earlier writes of this thread are ordered
//                 before later ones for any acquire reader.
//   Flush         a full fence; nothing is ever outstanding.
//   Progress      nothing to do (targets need not progress).
// Access rights and bounds are checked at the origin (kPermissionDenied,
// kOutOfRange); a key is checked against the region it names; a region freed
// while a peer holds a RemoteRegion gives kUnavailable on the peer's next use.
//
// Threading: a LocalTransport may be used by any thread of its rank
// concurrently. Lifetimes are more forgiving than the contract asks: regions,
// remote regions and transports may be destroyed in any order.
#pragma once

#include <memory>

#include "backends/local/local_fabric.h"
#include "framework/transport/transport.h"

namespace stalelearn::backends::local {

class LocalTransport final : public transport::Transport {
 public:
  LocalTransport(Rank rank, std::shared_ptr<LocalFabric> fabric);

  Rank rank() const override { return rank_; }
  int world_size() const override { return fabric_->world_size(); }
  transport::Capabilities capabilities() const override;
  const char* name() const override { return "local"; }

  Result<std::unique_ptr<transport::MemoryRegion>> Register(std::size_t bytes, Access access) override;
  Result<std::unique_ptr<transport::RemoteRegion>> Import(Rank owner, std::span<const std::byte> key) override;

  Result<transport::RequestPtr> Put(const void* src, std::size_t bytes, const transport::RemoteRegion& dst,
                                    std::uint64_t offset) override;
  Result<transport::RequestPtr> Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                    std::uint64_t offset) override;
  Result<transport::RequestPtr> AtomicAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                          std::uint64_t value) override;
  Result<transport::RequestPtr> FetchAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                         std::uint64_t value, std::uint64_t* old) override;
  Result<transport::RequestPtr> CompareSwap(const transport::RemoteRegion& dst, std::uint64_t offset,
                                            std::uint64_t expected, std::uint64_t desired,
                                            std::uint64_t* old) override;

  Status Fence(Rank peer) override;
  Status Flush(Rank peer, transport::Timeout timeout) override;
  Status FlushAll(transport::Timeout timeout) override;
  void Progress() override {}

 private:
  // What an operation may touch once all checks passed: the region (kept
  // alive for the operation) and the first byte it reaches.
  struct Target {
    std::shared_ptr<RegionMemory> region;
    std::byte* address;
  };
  // Checks `remote` for an operation `op` of `bytes` at `offset` that needs
  // `needed` rights: backend, liveness, rights, bounds.
  Result<Target> Reach(const transport::RemoteRegion& remote, std::uint64_t offset, std::size_t bytes,
                       Access needed, const char* op) const;
  // Reach() for a 64-bit atomic: also checks alignment.
  Result<Target> ReachWord(const transport::RemoteRegion& remote, std::uint64_t offset, const char* op) const;
  Status CheckPeer(Rank peer, const char* op) const;

  const Rank rank_;
  const std::shared_ptr<LocalFabric> fabric_;
};

}  // namespace stalelearn::backends::local
