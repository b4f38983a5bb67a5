// A fast, portable 64-bit hash of bytes (word-at-a-time multiply-rotate with a
// SplitMix64 finalizer). Used for batch checksums (catching torn or corrupted
// batches, I3/I7) and the report's model checksum. Not cryptographic.
// Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace stalelearn::model {

std::uint64_t Hash64(std::span<const std::byte> bytes, std::uint64_t seed = 0);

// Streaming form: Hash64 of the concatenation equals feeding the parts in
// order only when every part but the last is a multiple of 8 bytes; the model
// checksum feeds whole rows of 4-byte elements, so it feeds row blocks.
class Hasher {
 public:
  explicit Hasher(std::uint64_t seed = 0) : state_(seed ^ 0x9E3779B97F4A7C15ull) {}
  void Update(std::span<const std::byte> bytes);
  std::uint64_t Finish() const;

 private:
  std::uint64_t state_;
  std::uint64_t length_ = 0;
};

// 16 lowercase hex digits.
std::string HexDigest(std::uint64_t value);

}  // namespace stalelearn::model
