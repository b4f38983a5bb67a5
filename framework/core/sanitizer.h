// What a ThreadSanitizer build (deploy/tsan.sh) needs from the code.
//
// STALELEARN_TSAN_BUILD: defined when compiling with -fsanitize=thread (g++ or
// clang); STALELEARN_ASAN_BUILD likewise for -fsanitize=address.
//
// TbbHappensBefore: libtbb.so is not instrumented, so TSan does not see the
// synchronisation by which a parallel_for orders the caller's writes before
// every chunk and every chunk before the call's return. Without it TSan
// reports the chunks' reads of the caller's data (a std::function, a
// replica's rows) against the caller's later writes as races; a suppression
// broad enough to hide those (race:tbb::detail::) also hid real races inside
// the loop bodies. The annotations state exactly TBB's guarantee and nothing
// more; chunks stay unordered among themselves, so a race between two chunks
// is still reported. No-ops outside TSan builds.
//
//   TbbHappensBefore hb;
//   hb.BeforeLoop();
//   tbb::parallel_for(range, [&](auto r) { hb.ChunkBegins(); ...; hb.ChunkEnds(); });
//   hb.AfterLoop();
//
// Thread-safety: ChunkBegins and ChunkEnds from any worker; BeforeLoop and
// AfterLoop on the calling thread.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define STALELEARN_TSAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STALELEARN_TSAN_BUILD 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
#define STALELEARN_ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STALELEARN_ASAN_BUILD 1
#endif
#endif

#if defined(STALELEARN_TSAN_BUILD)
#include <sanitizer/tsan_interface.h>
#endif

namespace stalelearn {

class TbbHappensBefore {
 public:
#if defined(STALELEARN_TSAN_BUILD)
  void BeforeLoop() { __tsan_release(&start_); }
  void ChunkBegins() { __tsan_acquire(&start_); }
  void ChunkEnds() { __tsan_release(&end_); }
  void AfterLoop() { __tsan_acquire(&end_); }

 private:
  char start_ = 0;
  char end_ = 0;
#else
  void BeforeLoop() {}
  void ChunkBegins() {}
  void ChunkEnds() {}
  void AfterLoop() {}
#endif
};

}  // namespace stalelearn
