#include "backends/ucx/region_key.h"

#include <cstring>

#include <fmt/format.h>

namespace stalelearn::backends::ucx {
namespace {

constexpr std::uint32_t kMagic = 0x58554c53;  // "SLUX" little-endian
constexpr std::uint32_t kVersion = 1;

struct Header {
  std::uint32_t magic;
  std::uint32_t version;
  std::int32_t owner;
  std::uint32_t access;
  std::uint64_t base_address;
  std::uint64_t size;
  std::uint64_t rkey_length;
};
static_assert(sizeof(Header) == 40, "key layout must not depend on padding");

std::uint64_t Fnv1a64(std::span<const std::byte> bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) {
    hash ^= static_cast<std::uint8_t>(b);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

template <class T>
void Append(transport::PackedKey& out, const T& value) {
  const auto* bytes = reinterpret_cast<const std::byte*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof(T));
}

}  // namespace

transport::PackedKey EncodeRegionKey(const RegionKey& key) {
  const Header header{kMagic,
                      kVersion,
                      key.owner.value,
                      static_cast<std::uint32_t>(key.access),
                      key.base_address,
                      key.size,
                      key.packed_rkey.size()};
  transport::PackedKey out;
  out.reserve(sizeof(Header) + key.packed_rkey.size() + sizeof(std::uint64_t));
  Append(out, header);
  out.insert(out.end(), key.packed_rkey.begin(), key.packed_rkey.end());
  Append(out, Fnv1a64(out));
  return out;
}

Result<RegionKey> DecodeRegionKey(std::span<const std::byte> bytes) {
  constexpr std::size_t kMinimum = sizeof(Header) + sizeof(std::uint64_t);
  if (bytes.size() < kMinimum) {
    return InvalidArgument(fmt::format("ucx region key: {} bytes, need at least {}", bytes.size(), kMinimum));
  }
  Header header;
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (header.magic != kMagic) return InvalidArgument("ucx region key: not a key of the ucx backend (bad magic)");
  if (header.version != kVersion) {
    return InvalidArgument(fmt::format("ucx region key: version {}, expected {}", header.version, kVersion));
  }
  if (header.rkey_length != bytes.size() - kMinimum) {
    return InvalidArgument(fmt::format("ucx region key: says {} rkey bytes, carries {}", header.rkey_length,
                                       bytes.size() - kMinimum));
  }
  const auto covered = bytes.first(bytes.size() - sizeof(std::uint64_t));
  std::uint64_t checksum = 0;
  std::memcpy(&checksum, bytes.data() + covered.size(), sizeof(checksum));
  if (checksum != Fnv1a64(covered)) return InvalidArgument("ucx region key: checksum mismatch (corrupt key)");
  if (header.owner < 0) return InvalidArgument(fmt::format("ucx region key: owner rank {}", header.owner));
  if (header.base_address + header.size < header.base_address) {
    return InvalidArgument("ucx region key: region wraps around the address space");
  }
  return RegionKey{transport::Rank{header.owner}, header.base_address, header.size,
                   static_cast<transport::Access>(header.access), bytes.subspan(sizeof(Header), header.rkey_length)};
}

}  // namespace stalelearn::backends::ucx
