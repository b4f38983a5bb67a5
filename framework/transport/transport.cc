#include "framework/transport/transport.h"

#include <atomic>

namespace stalelearn::transport {

std::uint64_t LoadAcquire64(const std::byte* word) {
  // The word lives in registered memory that peers write with RMA; atomic_ref
  // gives the acquire ordering the commit-word protocol needs (deploy/README.md).
  return std::atomic_ref<const std::uint64_t>(*reinterpret_cast<const std::uint64_t*>(word))
      .load(std::memory_order_acquire);
}

void StoreRelease64(std::byte* word, std::uint64_t value) {
  std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(word)).store(value, std::memory_order_release);
}

Status PutBlocking(Transport& t, const void* src, std::size_t bytes, const RemoteRegion& dst,
                   std::uint64_t offset, Timeout timeout) {
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, t.Put(src, bytes, dst, offset));
  return request->Wait(timeout);
}

Status GetBlocking(Transport& t, void* dst, std::size_t bytes, const RemoteRegion& src,
                   std::uint64_t offset, Timeout timeout) {
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, t.Get(dst, bytes, src, offset));
  return request->Wait(timeout);
}

Result<std::uint64_t> FetchAddBlocking(Transport& t, const RemoteRegion& dst, std::uint64_t offset,
                                       std::uint64_t value, Timeout timeout) {
  std::uint64_t old = 0;
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, t.FetchAdd(dst, offset, value, &old));
  STALELEARN_RETURN_IF_ERROR(request->Wait(timeout));
  return old;
}

Result<std::uint64_t> CompareSwapBlocking(Transport& t, const RemoteRegion& dst, std::uint64_t offset,
                                          std::uint64_t expected, std::uint64_t desired, Timeout timeout) {
  std::uint64_t old = 0;
  STALELEARN_ASSIGN_OR_RETURN(RequestPtr request, t.CompareSwap(dst, offset, expected, desired, &old));
  STALELEARN_RETURN_IF_ERROR(request->Wait(timeout));
  return old;
}

}  // namespace stalelearn::transport
