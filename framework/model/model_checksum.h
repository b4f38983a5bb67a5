// The report's model checksum, defined row by row so that it adds up over
// parts: the digest of a set of rows is the sum (mod 2^64) of each row's
// hash (XXH3-64 of its element bits, seeded by its table and row id), and
// the checksum is a hash of the whole model's digest. Ranks that each hold a
// part of the model (disjoint row ranges, together every row) add their
// parts' digests and get the same checksum as one rank with the whole model:
//
//   std::uint64_t sum = 0;
//   for (int p = 0; p < parts; ++p) sum += ModelDigest(tables, RowsOfPart(tables, p, parts));
//   assert(ChecksumOfDigest(sum) == ModelChecksum(tables));
//
// Equal models give equal checksums on every rank layout; a changed element
// changes its row's hash, so the sum. Not cryptographic: it names a model in
// a report, it does not guard against forgery. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "framework/model/row_block.h"
#include "framework/model/row_range.h"

namespace stalelearn::model {

// Sum of the hashes of rows `range` of `block`, table `table`.
std::uint64_t RowsDigest(const RowBlock& block, std::uint32_t table, RowRange range);
// Sum over tables t of RowsDigest(tables[t], t, ranges[t]) (ranges: one per table).
std::uint64_t ModelDigest(const TableSet& tables, std::span<const RowRange> ranges);
// The checksum of a model whose rows' digests sum to `digest`.
std::uint64_t ChecksumOfDigest(std::uint64_t digest);
// ChecksumOfDigest of every row of every table.
std::uint64_t ModelChecksum(const TableSet& tables);

}  // namespace stalelearn::model
