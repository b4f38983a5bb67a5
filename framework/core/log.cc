#include "framework/core/log.h"

#include <atomic>
#include <cstdio>
#include <string>

namespace stalelearn::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};
thread_local int t_rank = -1;
}  // namespace

void SetLevel(Level level) { g_level.store(level, std::memory_order_relaxed); }
Level GetLevel() { return g_level.load(std::memory_order_relaxed); }
void SetThreadRank(int rank) { t_rank = rank; }

void Write(Level level, std::string_view line) {
  static constexpr std::string_view kNames[] = {"debug", "info", "warning", "error"};
  std::string out = t_rank >= 0 ? fmt::format("[rank {}] ", t_rank) : std::string();
  if (level != Level::kInfo) {
    out += kNames[static_cast<int>(level)];
    out += ": ";
  }
  out += line;
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stderr);
}

}  // namespace stalelearn::log
