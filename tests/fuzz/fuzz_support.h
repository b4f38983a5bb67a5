// Helpers shared by the fuzz targets (tests/fuzz/*_fuzzer.cc).
//
// A target feeds the input to one parser and, where the parser accepts it,
// checks properties of the result with FUZZ_CHECK: a violated property aborts
// like a crash, so the fuzzer reports it and saves the input. Rejections
// (a non-OK Status) are the expected outcome for most inputs.
//
// Thread-safety: none needed (libFuzzer calls a target from one thread).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string_view>

#define FUZZ_CHECK(condition)                                                             \
  do {                                                                                    \
    if (!(condition)) {                                                                   \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                       \
    }                                                                                     \
  } while (0)

namespace stalelearn::fuzz {

inline std::string_view AsText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits `input` at the first `separator`: {before, after} (after empty if none).
inline std::pair<std::string_view, std::string_view> SplitAt(std::string_view input, std::string_view separator) {
  const std::size_t at = input.find(separator);
  if (at == std::string_view::npos) return {input, {}};
  return {input.substr(0, at), input.substr(at + separator.size())};
}

}  // namespace stalelearn::fuzz
