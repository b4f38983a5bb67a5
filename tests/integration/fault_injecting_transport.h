// A Transport decorator for tests that breaks puts on purpose (I3 tests):
// a policy decides per put whether it passes, fails (the writer "stops" at
// that point: nothing lands) or lands with its last byte flipped (a corrupted
// batch). Everything else is forwarded unchanged (gets are counted). Test hooks live here, not in
// the backends.
//
// Thread-safe like the wrapped transport (the policy is called under a lock).
// The wrapped transport must outlive the decorator.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "framework/transport/forwarding_transport.h"

namespace stalelearn::testing {

struct PutCall {
  transport::Rank target;
  std::uint64_t offset = 0;
  std::size_t bytes = 0;
  std::int64_t index = 0;  // puts issued through this decorator before this one
};

enum class PutFault { kNone, kFail, kCorrupt };
using PutPolicy = std::function<PutFault(const PutCall&)>;

class FaultInjectingTransport final : public transport::ForwardingTransport {
 public:
  FaultInjectingTransport(transport::Transport& inner, PutPolicy policy)
      : ForwardingTransport(inner), policy_(std::move(policy)) {}

  std::int64_t faults_injected() const {
    std::lock_guard lock(mutex_);
    return faults_;
  }

  Result<transport::RequestPtr> Put(const void* src, std::size_t bytes, const transport::RemoteRegion& dst,
                                    std::uint64_t offset) override {
    const void* source = src;
    {
      std::lock_guard lock(mutex_);
      const PutFault fault = policy_ ? policy_(PutCall{dst.owner(), offset, bytes, puts_++}) : PutFault::kNone;
      if (fault == PutFault::kFail) {
        ++faults_;
        return Unavailable("injected fault: the writer stopped before this put");
      }
      if (fault == PutFault::kCorrupt && bytes > 0) {
        ++faults_;
        // Kept alive for the life of the decorator: the put may complete later.
        auto& copy = corrupted_.emplace_back(static_cast<const std::byte*>(src),
                                             static_cast<const std::byte*>(src) + bytes);
        copy.back() ^= std::byte{0x5A};
        source = copy.data();
      }
    }
    return inner_.Put(source, bytes, dst, offset);
  }

  // Gets pass unchanged; counted (a test of which reads a writer makes).
  Result<transport::RequestPtr> Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                    std::uint64_t offset) override {
    {
      std::lock_guard lock(mutex_);
      ++gets_;
    }
    return inner_.Get(dst, bytes, src, offset);
  }
  std::int64_t gets() const {
    std::lock_guard lock(mutex_);
    return gets_;
  }

 private:
  PutPolicy policy_;
  mutable std::mutex mutex_;
  std::int64_t puts_ = 0;
  std::int64_t gets_ = 0;
  std::int64_t faults_ = 0;
  std::deque<std::vector<std::byte>> corrupted_;
};

}  // namespace stalelearn::testing
