#include "tests/unit/data/md5.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <fmt/format.h>

namespace stalelearn::data::testing {
namespace {

constexpr std::array<std::uint32_t, 64> kShift = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
    5, 9,  14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21,
    6, 10, 15, 21, 6, 10, 15, 21};

std::array<std::uint32_t, 64> SineTable() {
  std::array<std::uint32_t, 64> k{};
  for (std::size_t i = 0; i < 64; ++i) {
    k[i] = static_cast<std::uint32_t>(std::floor(std::fabs(std::sin(static_cast<double>(i + 1))) * 4294967296.0));
  }
  return k;
}

}  // namespace

std::string Md5Hex(std::string_view bytes) {
  static const std::array<std::uint32_t, 64> kSine = SineTable();
  std::string message(bytes);
  const std::uint64_t bit_length = static_cast<std::uint64_t>(bytes.size()) * 8;
  message += static_cast<char>(0x80);
  while (message.size() % 64 != 56) message += '\0';
  for (int i = 0; i < 8; ++i) message += static_cast<char>(bit_length >> (8 * i));

  std::array<std::uint32_t, 4> state = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
  for (std::size_t chunk = 0; chunk < message.size(); chunk += 64) {
    std::array<std::uint32_t, 16> m{};
    for (std::size_t i = 0; i < 64; ++i) {
      m[i / 4] |= static_cast<std::uint32_t>(static_cast<unsigned char>(message[chunk + i])) << (8 * (i % 4));
    }
    auto [a, b, c, d] = state;
    for (std::uint32_t i = 0; i < 64; ++i) {
      std::uint32_t f, g;
      if (i < 16) f = (b & c) | (~b & d), g = i;
      else if (i < 32) f = (d & b) | (~d & c), g = (5 * i + 1) % 16;
      else if (i < 48) f = b ^ c ^ d, g = (3 * i + 5) % 16;
      else f = c ^ (b | ~d), g = (7 * i) % 16;
      const std::uint32_t rotated = std::rotl(a + f + kSine[i] + m[g], static_cast<int>(kShift[i]));
      a = d;
      d = c;
      c = b;
      b += rotated;
    }
    state[0] += a, state[1] += b, state[2] += c, state[3] += d;
  }
  std::string hex;
  for (std::uint32_t word : state) {
    for (int i = 0; i < 4; ++i) hex += fmt::format("{:02x}", (word >> (8 * i)) & 0xff);
  }
  return hex;
}

}  // namespace stalelearn::data::testing
