// Minimal leveled logging to stderr, one line per call, prefixed with the rank
// when one is set. Thread-safe: each line is written with a single fwrite.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace stalelearn::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLevel(Level level);
Level GetLevel();
// Sets the rank printed in front of this thread's lines; -1 prints none.
void SetThreadRank(int rank);

void Write(Level level, std::string_view line);

template <typename... Args>
void Debug(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLevel() <= Level::kDebug) Write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Info(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLevel() <= Level::kInfo) Write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Warning(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLevel() <= Level::kWarning) Write(Level::kWarning, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Error(fmt::format_string<Args...> f, Args&&... args) {
  Write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace stalelearn::log
