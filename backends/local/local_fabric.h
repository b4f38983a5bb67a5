// The shared memory of the 'local' backend: every region that the ranks of
// one InProcessGroup registered, by id. One LocalFabric per group, shared by
// the ranks' LocalTransports through InProcessGroup::GetOrCreateShared.
//
// Lifetimes: a region's memory (RegionMemory) is owned by its owner's
// MemoryRegion; the fabric and peers' RemoteRegions hold weak_ptrs, so a
// region freed while a peer still holds a RemoteRegion makes the peer's next
// operation fail with kUnavailable instead of touching freed memory. An
// operation in flight holds a shared_ptr, so memory is never freed under a
// memcpy.
//
// Thread-safety: all methods may be called from any thread concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <span>

#include "framework/core/status.h"
#include "framework/transport/types.h"

namespace stalelearn::backends::local {

using transport::Access;
using transport::PackedKey;
using transport::Rank;

// Identifies a region within one fabric; never reused.
struct RegionId {
  std::uint64_t value = 0;
  friend auto operator<=>(RegionId, RegionId) = default;
};

// Registered memory and what a key must match to reach it. Immutable after
// creation except for the bytes themselves.
struct RegionMemory {
  RegionId id;
  Rank owner;
  std::size_t size = 0;
  Access access = Access::kNone;
  std::uint64_t tag = 0;  // random; a key must carry it
  std::unique_ptr<std::byte[]> bytes;  // zeroed, new[]-aligned (>= 16 bytes)
};

class LocalFabric {
 public:
  explicit LocalFabric(int world_size);

  int world_size() const { return world_size_; }

  // Allocates `size` zeroed bytes for `owner`. kInvalidArgument for size 0,
  // kUnavailable if the memory cannot be allocated.
  Result<std::shared_ptr<RegionMemory>> Allocate(Rank owner, std::size_t size, Access access);
  // Forgets a region; called when its owner's MemoryRegion is destroyed.
  void Release(RegionId id);

  // The opaque key of `region` (fixed layout, see local_fabric.cc).
  PackedKey PackKey(const RegionMemory& region) const;
  // Finds the region a key names. kInvalidArgument for a malformed or forged
  // key, a key of another group or of another owner than `owner`;
  // kUnavailable if the region was freed.
  Result<std::weak_ptr<RegionMemory>> Resolve(Rank owner, std::span<const std::byte> key) const;

 private:
  const int world_size_;
  const std::uint64_t fabric_tag_;  // random; tells keys of another group apart

  mutable std::mutex mutex_;  // guards everything below
  std::uint64_t next_id_ = 1;
  std::mt19937_64 tag_source_;
  std::map<RegionId, std::weak_ptr<RegionMemory>> regions_;
};

}  // namespace stalelearn::backends::local
