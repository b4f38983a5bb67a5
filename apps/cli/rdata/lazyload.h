// R lazy-load databases, as installed packages keep their data sets
// (e.g. dslabs/data/Rdata.{rdx,rdb}):
//  - <base>.rdx: a gzip-compressed R serialization of a list with
//    `variables` (object name -> (offset, length) in the .rdb),
//    `references` and `compressed` (0 stored, 1 zlib, 2 bzip2, 3 xz);
//  - <base>.rdb: entries at those offsets; compressed ones start with the
//    4-byte big-endian uncompressed length, then the compressed stream of an
//    R serialization (rdata_unserialize.h).
// Stored and zlib entries are supported; bzip2 and xz give Unimplemented.
//
// Thread-safety: a LazyLoadDb is immutable after Open; Load may be called
// from several threads (each call opens the .rdb itself).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "framework/core/status.h"
#include "apps/cli/rdata/object.h"

namespace stalelearn::data::rdata {

// Inflates a zlib or gzip stream (detected from its header). Fails with
// DataLoss on a corrupt or truncated stream, or when the output would exceed
// `max_output` bytes.
Result<std::vector<std::uint8_t>> Inflate(std::span<const std::uint8_t> compressed, std::size_t max_output);

class LazyLoadDb {
 public:
  // Reads the index <base>.rdx; `base` is the path without the extension.
  static Result<LazyLoadDb> Open(const std::filesystem::path& base);

  // Object names, in index order.
  std::vector<std::string> ObjectNames() const;
  // Reads, decompresses and unserializes the object called `name`.
  Result<RObjectPtr> Load(std::string_view name) const;

 private:
  struct Entry {
    std::string name;
    std::uint64_t offset;
    std::uint64_t length;
  };
  LazyLoadDb() = default;

  std::filesystem::path rdb_path_;
  std::vector<Entry> entries_;
  int compression_ = 0;
};

}  // namespace stalelearn::data::rdata
