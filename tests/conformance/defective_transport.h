// A transport with one deliberate defect, over the 'local' backend: the
// conformance suite's own test (conformance_selftest.cc) checks that every
// case fails on the defect it exists to catch. Test-only code.
//
// Registered as backend "defective" with option defect=<name> (DefectNames()).
// Threading: like the wrapped transport, except that deferred puts are kept
// per transport unsynchronised: one thread per rank, as in the suite.
// Lifetimes: deferred puts point at RemoteRegions and sources copied at issue;
// they are applied at the next Flush or Fence, or dropped with the transport.
// The transports made by one RegisterDefectiveBackends registry share a
// teardown ledger (for kTeardownBreaksOtherTransports); it lives as long as
// the registry's factory and its transports.
#pragma once

#include <string_view>
#include <vector>

#include "framework/transport/registry.h"

namespace stalelearn::conformance {

enum class Defect {
  kTruncatesLargePuts,     // puts over 4 KiB lose their last byte
  kFenceDoesNotOrder,      // puts wait for the next Flush; Fence does nothing
  kFlushDoesNotComplete,   // puts wait for the next Fence; Flush does nothing
  kLosesAtomicAdds,        // every 1000th atomic add is dropped
  kEveryoneWinsCompareSwap,  // compare-swap reports "was expected" to every caller
  kIgnoresAccessRights,    // kPermissionDenied becomes success
  kIgnoresBounds,          // kOutOfRange becomes success (nothing is written)
  kDuplicatesAtomicAdds,   // every 7th atomic add is applied twice (a retransmission
                           // without deduplication): barriers let ranks out early
  kTeardownBreaksOtherTransports,  // destroying a transport tears down what the
                                   // rank's other transports use: their RMA fails
};

struct DefectName {
  std::string_view name;
  Defect defect;
};
std::span<const DefectName> DefectNames();

// Registers 'local' and 'defective'.
Status RegisterDefectiveBackends(transport::BackendRegistry& registry);

}  // namespace stalelearn::conformance
