// Reader of R's serialization format, XDR flavour, versions 2 and 3: what
// saveRDS() and R's lazy-load databases (.rdb entries, .rdx index) hold once
// decompressed. Supports the types data sets use: NULL, symbols, pairlists,
// logical/integer/double/complex/character/raw vectors, lists, S4 objects,
// back-references (REFSXP), environments as opaque placeholders, and the
// ALTREP classes R writes for data (compact_intseq, compact_realseq,
// wrap_*), which are expanded to plain vectors. Closures and bytecode are
// rejected as unsupported.
//
// Corrupt input (truncated, bad magic, bad reference, absurd length) gives
// DataLoss with the byte offset, never a crash: lengths are checked against
// the bytes left before anything is allocated.
//
// Thread-safety: reentrant; the returned object is immutable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "framework/core/status.h"
#include "apps/cli/rdata/object.h"

namespace stalelearn::data::rdata {

struct UnserializeLimits {
  std::size_t max_depth = 4096;                  // nesting of objects
  std::size_t max_expanded_elements = 1u << 28;  // all ALTREP sequences of one input together
};

Result<RObjectPtr> Unserialize(std::span<const std::uint8_t> bytes, const UnserializeLimits& limits = {});

}  // namespace stalelearn::data::rdata
