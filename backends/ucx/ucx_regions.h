// Local and remote regions of the 'ucx' backend. A UcxMemoryRegion owns its
// UCX mapping and the exported key bytes; a UcxRemoteRegion owns the rkey
// unpacked for its owner's endpoint and remembers the bounds and rights the
// key announced, which the origin checks before every access (framework/README.md, I7).
//
// Thread-safety: immutable after construction; safe to share between threads.
// Lifetimes: both must be destroyed before the UcxTransport that made them
// (the mapping needs the context, the rkey the endpoint).
#pragma once

#include "backends/ucx/handles.h"
#include "backends/ucx/region_key.h"
#include "framework/transport/transport.h"

namespace stalelearn::backends::ucx {

class UcxTransport;

class UcxMemoryRegion final : public transport::MemoryRegion {
 public:
  UcxMemoryRegion(MemoryMapping mapping, std::size_t size, transport::Access access, transport::PackedKey key)
      : mapping_(std::move(mapping)), size_(size), access_(access), key_(std::move(key)) {}

  std::byte* data() override { return mapping_.address(); }
  std::size_t size() const override { return size_; }
  transport::Access access() const override { return access_; }
  const transport::PackedKey& key() const override { return key_; }

 private:
  MemoryMapping mapping_;
  std::size_t size_;
  transport::Access access_;
  transport::PackedKey key_;
};

class UcxRemoteRegion final : public transport::RemoteRegion {
 public:
  UcxRemoteRegion(const UcxTransport* importer, ucp_ep_h endpoint, const RegionKey& key, Rkey rkey)
      : importer_(importer),
        endpoint_(endpoint),
        owner_(key.owner),
        base_address_(key.base_address),
        size_(key.size),
        access_(key.access),
        rkey_(std::move(rkey)) {}

  transport::Rank owner() const override { return owner_; }
  std::size_t size() const override { return size_; }

  const UcxTransport* importer() const { return importer_; }
  ucp_ep_h endpoint() const { return endpoint_; }
  ucp_rkey_h rkey() const { return rkey_.get(); }
  transport::Access access() const { return access_; }
  std::uint64_t address_at(std::uint64_t offset) const { return base_address_ + offset; }

 private:
  const UcxTransport* importer_;  // only this transport may use the rkey
  ucp_ep_h endpoint_;             // owned by the importer
  transport::Rank owner_;
  std::uint64_t base_address_;
  std::size_t size_;
  transport::Access access_;
  Rkey rkey_;
};

}  // namespace stalelearn::backends::ucx
