// A fast 64-bit hash of bytes: XXH3-64 from the xxHash library (Debian
// libxxhash-dev), not cryptographic. Used for batch checksums (catching torn
// or corrupted batches, I3/I7) and the report's model checksum.
//
//   std::uint64_t h = Hash64(bytes, seed);
//   Hasher hasher(seed);                 // streaming: any split of the bytes
//   for (auto part : parts) hasher.Update(part);
//   assert(hasher.Finish() == Hash64(concatenation, seed));
//
// Hash64: stateless, thread-safe. Hasher: one per thread; move-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace stalelearn::model {

std::uint64_t Hash64(std::span<const std::byte> bytes, std::uint64_t seed = 0);

// Streaming form: Finish() equals Hash64 of everything fed, however it was
// split into Update calls.
class Hasher {
 public:
  explicit Hasher(std::uint64_t seed = 0);
  ~Hasher();
  Hasher(Hasher&&) noexcept;
  Hasher& operator=(Hasher&&) noexcept;

  void Update(std::span<const std::byte> bytes);
  std::uint64_t Finish() const;

 private:
  struct State;  // the library's XXH3 state
  std::unique_ptr<State> state_;
};

// 16 lowercase hex digits.
std::string HexDigest(std::uint64_t value);

}  // namespace stalelearn::model
