#include "framework/model/hash64.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

namespace stalelearn::model {
namespace {

constexpr std::uint64_t kMul1 = 0x9FB21C651E98DF25ull;
constexpr std::uint64_t kMul2 = 0xC2B2AE3D27D4EB4Full;

std::uint64_t Mix(std::uint64_t h, std::uint64_t word) { return std::rotl(h ^ (word * kMul1), 29) * kMul2; }

std::uint64_t Finalize(std::uint64_t z) {  // SplitMix64 finalizer: full avalanche
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

void Hasher::Update(std::span<const std::byte> bytes) {
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    state_ = Mix(state_, w);
  }
  if (i < bytes.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, bytes.size() - i);
    state_ = Mix(state_, w ^ (0xFFull << 56));  // tail marker: "ab" and "ab\0" differ
  }
  length_ += bytes.size();
}

std::uint64_t Hasher::Finish() const { return Finalize(state_ ^ length_); }

std::uint64_t Hash64(std::span<const std::byte> bytes, std::uint64_t seed) {
  Hasher h(seed);
  h.Update(bytes);
  return h.Finish();
}

std::string HexDigest(std::uint64_t value) { return fmt::format("{:016x}", value); }

}  // namespace stalelearn::model
