// The line of /proc/self/smaps that starts with `key` ("Rss:", "VmFlags:")
// in the entry of the mapping holding `address`, or "" (tests of where large
// blocks live: huge_page_new_test.cc, zeroed_pages_test.cc).
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace stalelearn::testing {

inline std::string SmapsLineOf(const void* address, std::string_view key) {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
      inside = begin <= a && a < end;
      continue;
    }
    if (inside && line.rfind(key, 0) == 0) return line;
  }
  return "";
}

}  // namespace stalelearn::testing
