// Expansion of the ALTREP classes R writes into serialized data (internal to
// the R reader): compact_intseq / compact_realseq (e.g. 1:n row names) become
// plain vectors, wrap_* wrappers become the vector they wrap. Other classes
// (deferred_string, classes of packages) give Unimplemented.
//
// Thread-safety: reentrant.
#pragma once

#include <cstddef>
#include <vector>

#include "framework/core/status.h"
#include "apps/cli/rdata/object.h"

namespace stalelearn::data::rdata {

// `info` is the class pairlist (class symbol, package symbol, type), `state`
// the serialized state, `attributes` those of the ALTREP object. A sequence
// longer than `max_elements` is rejected (DataLoss) instead of allocated.
Result<RObjectPtr> ExpandAltrep(const RObject& info, const RObject& state, std::vector<RTagged> attributes,
                                std::size_t max_elements);

}  // namespace stalelearn::data::rdata
