// A Transport decorator that counts what a rank sends and fetches (report
// fields bytes_put, bytes_get, puts, gets, atomics). It forwards every call to
// the wrapped transport (ForwardingTransport), so backends stay free of bookkeeping.
//
// Thread-safe like the wrapped transport (relaxed atomic counters). The
// wrapped transport must outlive the decorator.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/transport/forwarding_transport.h"

namespace stalelearn::metrics {

struct TransportCounters {
  std::int64_t bytes_put = 0;
  std::int64_t bytes_get = 0;
  std::int64_t puts = 0;
  std::int64_t gets = 0;
  std::int64_t atomics = 0;
  // Not a count: the wrapped backend's DescribeEndpoints(), taken with the
  // counts so that the report gets both from one call.
  std::vector<transport::PeerTransports> endpoints;
};

class CountingTransport final : public transport::ForwardingTransport {
 public:
  explicit CountingTransport(transport::Transport& inner) : ForwardingTransport(inner) {}

  TransportCounters counters() const;
  // The byte counts alone (counters() also asks the backend for endpoints):
  // cheap enough to read around every phase of a clock (phase_times.h).
  std::int64_t bytes_put() const { return bytes_put_.load(std::memory_order_relaxed); }
  std::int64_t bytes_get() const { return bytes_get_.load(std::memory_order_relaxed); }

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

 private:
  std::atomic<std::int64_t> bytes_put_{0};
  std::atomic<std::int64_t> bytes_get_{0};
  std::atomic<std::int64_t> puts_{0};
  std::atomic<std::int64_t> gets_{0};
  std::atomic<std::int64_t> atomics_{0};
};

}  // namespace stalelearn::metrics
