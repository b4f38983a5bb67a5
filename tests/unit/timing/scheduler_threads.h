// Test helpers for the virtual-time scheduler's tests: ranks as threads.
#pragma once

#include <chrono>
#include <functional>
#include <thread>
#include <vector>

namespace stalelearn::backends::timing::test_util {

// Long enough that only a real hang trips it on a loaded 2-core machine.
inline constexpr auto kDeadline = std::chrono::milliseconds(20'000);

// Runs body(rank) on `n` threads and joins them.
inline void RunThreads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

}  // namespace stalelearn::backends::timing::test_util
