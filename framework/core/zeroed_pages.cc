#include "framework/core/zeroed_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace stalelearn {
namespace {

constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

std::size_t Rounded(std::size_t bytes) { return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

}  // namespace

void* AllocateZeroedPages(std::size_t bytes, bool touch_pages) {
  if (bytes < kHugePageBytes) return std::calloc(bytes == 0 ? 1 : bytes, 1);
  if (bytes > SIZE_MAX - 2 * kHugePageBytes) return nullptr;
  const std::size_t rounded = Rounded(bytes);
  // One huge page more than needed, then the unaligned ends given back.
  void* mapped = ::mmap(nullptr, rounded + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<std::uintptr_t>(mapped);
  const std::uintptr_t aligned = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > begin) ::munmap(mapped, aligned - begin);
  const std::size_t tail = begin + rounded + kHugePageBytes - (aligned + rounded);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(aligned + rounded), tail);
  void* p = reinterpret_cast<void*>(aligned);
  // A hint: where huge pages are off, the kernel uses 4 KiB pages.
  (void)::madvise(p, rounded, MADV_HUGEPAGE);
  if (touch_pages) std::memset(p, 0, bytes);  // faulted in now, not in the training loop
  return p;
}

void FreeZeroedPages(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (bytes < kHugePageBytes) {
    std::free(p);
    return;
  }
  ::munmap(p, Rounded(bytes));
}

}  // namespace stalelearn
