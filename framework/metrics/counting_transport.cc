#include "framework/metrics/counting_transport.h"

namespace stalelearn::metrics {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}

TransportCounters CountingTransport::counters() const {
  return {bytes_put_.load(kRelaxed), bytes_get_.load(kRelaxed), puts_.load(kRelaxed), gets_.load(kRelaxed),
          atomics_.load(kRelaxed), inner_.DescribeEndpoints()};
}

// Counted when issued successfully: an operation the backend refused moved nothing.
Result<transport::RequestPtr> CountingTransport::Put(const void* src, std::size_t bytes,
                                                     const transport::RemoteRegion& dst, std::uint64_t offset) {
  Result<transport::RequestPtr> r = inner_.Put(src, bytes, dst, offset);
  if (r.ok()) {
    puts_.fetch_add(1, kRelaxed);
    bytes_put_.fetch_add(static_cast<std::int64_t>(bytes), kRelaxed);
  }
  return r;
}

Result<transport::RequestPtr> CountingTransport::Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                                     std::uint64_t offset) {
  Result<transport::RequestPtr> r = inner_.Get(dst, bytes, src, offset);
  if (r.ok()) {
    gets_.fetch_add(1, kRelaxed);
    bytes_get_.fetch_add(static_cast<std::int64_t>(bytes), kRelaxed);
  }
  return r;
}

Result<transport::RequestPtr> CountingTransport::AtomicAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                                           std::uint64_t value) {
  Result<transport::RequestPtr> r = inner_.AtomicAdd(dst, offset, value);
  if (r.ok()) atomics_.fetch_add(1, kRelaxed);
  return r;
}

Result<transport::RequestPtr> CountingTransport::FetchAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                                          std::uint64_t value, std::uint64_t* old) {
  Result<transport::RequestPtr> r = inner_.FetchAdd(dst, offset, value, old);
  if (r.ok()) atomics_.fetch_add(1, kRelaxed);
  return r;
}

Result<transport::RequestPtr> CountingTransport::CompareSwap(const transport::RemoteRegion& dst,
                                                             std::uint64_t offset, std::uint64_t expected,
                                                             std::uint64_t desired, std::uint64_t* old) {
  Result<transport::RequestPtr> r = inner_.CompareSwap(dst, offset, expected, desired, old);
  if (r.ok()) atomics_.fetch_add(1, kRelaxed);
  return r;
}

}  // namespace stalelearn::metrics
