#include "backends/local/local_fabric.h"

#include <fmt/format.h>

#include <cstring>
#include <new>
#include <type_traits>

namespace stalelearn::backends::local {
namespace {

// The bytes of a key, in this fixed layout (no padding: memcpy'd as is).
struct KeyFields {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t fabric_tag;
  std::uint64_t region_id;
  std::int32_t owner;
  std::uint32_t access;
  std::uint64_t size;
  std::uint64_t region_tag;
};
static_assert(std::has_unique_object_representations_v<KeyFields>, "KeyFields must have no padding");

constexpr std::uint32_t kKeyMagic = 0x4b4c4c53;  // "SLLK"
constexpr std::uint32_t kKeyVersion = 1;

static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ >= 8, "atomics need 8-byte aligned region memory");

std::uint64_t RandomSeed() {
  std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device();
}

}  // namespace

LocalFabric::LocalFabric(int world_size)
    : world_size_(world_size), fabric_tag_(RandomSeed()), tag_source_(RandomSeed()) {}

Result<std::shared_ptr<RegionMemory>> LocalFabric::Allocate(Rank owner, std::size_t size, Access access) {
  if (size == 0) return InvalidArgument("cannot register a region of 0 bytes");
  auto region = std::make_shared<RegionMemory>();
  try {
    region->bytes.reset(new std::byte[size]());  // () zero-fills
  } catch (const std::bad_alloc&) {
    return Unavailable(fmt::format("cannot allocate a region of {} bytes", size));
  }
  region->owner = owner;
  region->size = size;
  region->access = access;
  std::lock_guard lock(mutex_);
  region->id = RegionId{next_id_++};
  region->tag = tag_source_();
  regions_.emplace(region->id, region);
  return region;
}

void LocalFabric::Release(RegionId id) {
  std::lock_guard lock(mutex_);
  regions_.erase(id);
}

PackedKey LocalFabric::PackKey(const RegionMemory& region) const {
  const KeyFields fields{kKeyMagic,        kKeyVersion,
                         fabric_tag_,      region.id.value,
                         region.owner.value, static_cast<std::uint32_t>(region.access),
                         region.size,      region.tag};
  PackedKey key(sizeof fields);
  std::memcpy(key.data(), &fields, sizeof fields);
  return key;
}

Result<std::weak_ptr<RegionMemory>> LocalFabric::Resolve(Rank owner, std::span<const std::byte> key) const {
  if (key.size() != sizeof(KeyFields)) {
    return InvalidArgument(fmt::format("bad key: {} bytes, a 'local' key has {}", key.size(), sizeof(KeyFields)));
  }
  KeyFields fields;
  std::memcpy(&fields, key.data(), sizeof fields);
  if (fields.magic != kKeyMagic || fields.version != kKeyVersion) {
    return InvalidArgument("bad key: not a key of the 'local' backend");
  }
  if (fields.fabric_tag != fabric_tag_) return InvalidArgument("bad key: made by another process group");
  if (fields.owner != owner.value) {
    return InvalidArgument(fmt::format("bad key: it names a region of rank {}, not of rank {}", fields.owner,
                                       owner.value));
  }
  std::lock_guard lock(mutex_);
  const RegionId id{fields.region_id};
  auto it = regions_.find(id);
  std::shared_ptr<RegionMemory> region = it == regions_.end() ? nullptr : it->second.lock();
  if (!region) {
    if (id.value != 0 && id.value < next_id_) {
      return Unavailable(fmt::format("region {} of rank {} was freed", id.value, owner.value));
    }
    return InvalidArgument(fmt::format("bad key: no region {} was ever registered", id.value));
  }
  if (fields.region_tag != region->tag || fields.size != region->size ||
      fields.access != static_cast<std::uint32_t>(region->access)) {
    return InvalidArgument(fmt::format("bad key: it does not match region {} of rank {}", id.value, owner.value));
  }
  return std::weak_ptr<RegionMemory>(region);
}

}  // namespace stalelearn::backends::local
