// An allocator for large arrays whose memory is zero when handed out, so a
// container need not write the zeros: std::vector<T, ZeroedPages<T>>(n)
// holds n zero values (T must be trivial and zero bits must mean zero).
//
//   - touch_pages = true (the default): every page is written once when the
//     block is allocated, as a zero-filled std::vector would (a replica or a
//     master shard: no page fault later, in the training loop);
//   - touch_pages = false: a block of 2 MiB or more is a fresh anonymous
//     mapping the kernel fills with zero pages only where it is touched, so
//     a large table of which a rank reads a part costs memory for that part
//     alone (an evaluation's model read in parts, app_facets.h).
// Either way blocks of 2 MiB or more are 2 MiB aligned and advised onto huge
// pages (as framework/core/huge_page_new.cc does for other large blocks);
// smaller ones come from calloc. Elements are default-initialised: a resize
// that grows the container after it shrank would leave old values, so the
// containers that use it only ever size it once.
//
// Thread-safe as mmap and calloc are; an allocator copies its setting.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace stalelearn {

// Zeroed memory of `bytes` (nullptr when out of memory), and its release.
void* AllocateZeroedPages(std::size_t bytes, bool touch_pages);
void FreeZeroedPages(void* p, std::size_t bytes) noexcept;

template <class T>
class ZeroedPages {
  static_assert(std::is_trivial_v<T>);

 public:
  using value_type = T;

  explicit ZeroedPages(bool touch_pages = true) : touch_pages_(touch_pages) {}
  template <class U>
  ZeroedPages(const ZeroedPages<U>& other) : touch_pages_(other.touch_pages()) {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    void* p = AllocateZeroedPages(n * sizeof(T), touch_pages_);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept { FreeZeroedPages(p, n * sizeof(T)); }
  // Default-initialisation writes nothing: the memory is zero already.
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  bool touch_pages() const { return touch_pages_; }
  template <class U>
  bool operator==(const ZeroedPages<U>&) const {
    return true;  // any one frees what another allocated (the size says how)
  }

 private:
  bool touch_pages_;
};

}  // namespace stalelearn
