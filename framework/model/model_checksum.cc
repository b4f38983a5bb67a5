#include "framework/model/model_checksum.h"

#include <algorithm>
#include <cassert>

#include "framework/model/hash64.h"

namespace stalelearn::model {
namespace {

constexpr std::uint64_t kChecksumSeed = 0xC0FFEE;

// A row's seed: distinct for every (table, row) with tables < 2^16.
std::uint64_t RowSeed(std::uint32_t table, std::int64_t row) {
  return kChecksumSeed ^ (std::uint64_t{table} << 48) ^ (static_cast<std::uint64_t>(row) * 0x9E3779B97F4A7C15ull);
}

}  // namespace

std::uint64_t RowsDigest(const RowBlock& block, std::uint32_t table, RowRange range) {
  assert(range.first >= 0 && range.first <= range.last && range.last <= block.rows());
  std::uint64_t sum = 0;
  for (std::int64_t row = range.first; row < range.last; ++row) {
    sum += Hash64(std::span(block.RowBytes(row), block.row_bytes()), RowSeed(table, row));
  }
  return sum;
}

std::uint64_t ModelDigest(const TableSet& tables, std::span<const RowRange> ranges) {
  assert(ranges.size() == tables.size());
  std::uint64_t sum = 0;
  for (std::size_t t = 0; t < tables.size(); ++t) {
    sum += RowsDigest(tables[t], static_cast<std::uint32_t>(t), ranges[t]);
  }
  return sum;
}

std::uint64_t ChecksumOfDigest(std::uint64_t digest) {
  return Hash64(std::as_bytes(std::span(&digest, 1)), kChecksumSeed);
}

std::uint64_t ModelChecksum(const TableSet& tables) {
  return ChecksumOfDigest(ModelDigest(tables, RowsOfPart(tables, 0, 1)));
}

}  // namespace stalelearn::model
