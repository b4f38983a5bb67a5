// The bytes of an exported UCX region key (transport::PackedKey): the packed
// rkey wrapped with what the origin needs to check an access before UCX sees
// it (framework/README.md, I7): owner, remote base address, size, access rights. A
// checksum covers everything, so a corrupt or foreign key is refused here and
// never reaches ucp_ep_rkey_unpack (which trusts its input).
//
//   [magic u32][version u32][owner i32][access u32][base u64][size u64]
//   [rkey length u64][rkey bytes][FNV-1a 64 of all the preceding bytes]
//
// Thread-safety: pure functions on values.
#pragma once

#include <cstdint>
#include <span>

#include "framework/core/status.h"
#include "framework/transport/types.h"

namespace stalelearn::backends::ucx {

struct RegionKey {
  transport::Rank owner;
  std::uint64_t base_address = 0;  // in the owner's address space
  std::uint64_t size = 0;
  transport::Access access = transport::Access::kNone;
  std::span<const std::byte> packed_rkey;  // views the encoded key or the UCX buffer
};

transport::PackedKey EncodeRegionKey(const RegionKey& key);

// kInvalidArgument naming the defect (too short, not a ucx key, version,
// checksum, lengths). The result's packed_rkey views `bytes`.
Result<RegionKey> DecodeRegionKey(std::span<const std::byte> bytes);

}  // namespace stalelearn::backends::ucx
