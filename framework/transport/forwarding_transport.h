// Base of Transport decorators (counting, fault injection in tests): forwards
// every call unchanged to the wrapped transport, so a decorator overrides only
// the calls it observes or alters.
//
// Thread-safe exactly as the wrapped transport. The wrapped transport must
// outlive the decorator.
#pragma once

#include "framework/transport/transport.h"

namespace stalelearn::transport {

class ForwardingTransport : public Transport {
 public:
  explicit ForwardingTransport(Transport& inner) : inner_(inner) {}

  Rank rank() const override { return inner_.rank(); }
  int world_size() const override { return inner_.world_size(); }
  Capabilities capabilities() const override { return inner_.capabilities(); }
  SimulatedTime* simulated_time() override { return inner_.simulated_time(); }
  const char* name() const override { return inner_.name(); }
  Result<std::unique_ptr<MemoryRegion>> Register(std::size_t bytes, Access access) override {
    return inner_.Register(bytes, access);
  }
  Result<std::unique_ptr<RemoteRegion>> Import(Rank owner, std::span<const std::byte> key) override {
    return inner_.Import(owner, key);
  }
  Result<RequestPtr> Put(const void* src, std::size_t bytes, const RemoteRegion& dst,
                         std::uint64_t offset) override {
    return inner_.Put(src, bytes, dst, offset);
  }
  Result<RequestPtr> Get(void* dst, std::size_t bytes, const RemoteRegion& src, std::uint64_t offset) override {
    return inner_.Get(dst, bytes, src, offset);
  }
  Result<RequestPtr> AtomicAdd(const RemoteRegion& dst, std::uint64_t offset, std::uint64_t value) override {
    return inner_.AtomicAdd(dst, offset, value);
  }
  Result<RequestPtr> FetchAdd(const RemoteRegion& dst, std::uint64_t offset, std::uint64_t value,
                              std::uint64_t* old) override {
    return inner_.FetchAdd(dst, offset, value, old);
  }
  Result<RequestPtr> CompareSwap(const RemoteRegion& dst, std::uint64_t offset, std::uint64_t expected,
                                 std::uint64_t desired, std::uint64_t* old) override {
    return inner_.CompareSwap(dst, offset, expected, desired, old);
  }
  Status Fence(Rank peer) override { return inner_.Fence(peer); }
  Status Flush(Rank peer, Timeout timeout) override { return inner_.Flush(peer, timeout); }
  Status FlushAll(Timeout timeout) override { return inner_.FlushAll(timeout); }
  void Progress() override { inner_.Progress(); }
  std::vector<PeerTransports> DescribeEndpoints() const override { return inner_.DescribeEndpoints(); }

 protected:
  Transport& inner_;
};

}  // namespace stalelearn::transport
