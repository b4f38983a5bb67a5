// Helpers for tests of the 'ucx' backend: create a UcxTransport on a bootstrap
// and wait on remote words while progressing (a ucx target must progress,
// deploy/README.md). Thread-safety: as the transport they are given.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "framework/core/error.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/transport.h"

namespace stalelearn::backends::ucx::testing {

constexpr std::chrono::seconds kTestTimeout{20};

// The 'ucx' backend through the registry, as a program would create it.
// Throws stalelearn::Error on failure.
std::unique_ptr<transport::Transport> CreateUcx(transport::Bootstrap& bootstrap,
                                                const std::map<std::string, std::string>& options);

// Progresses `t` until the 64-bit word at `word` (acquire load) reaches at
// least `value`; false after kTestTimeout.
bool ProgressUntilAtLeast(transport::Transport& t, const std::byte* word, std::uint64_t value);

// bootstrap.Barrier() while another thread progresses `t`, so that peers
// still completing operations on this rank are served (needs a transport that
// may be progressed from a second thread, as every backend may).
Status BarrierWhileProgressing(transport::Transport& t, transport::Bootstrap& bootstrap);

// All ranks' keys of their `region`, indexed by rank, imported by `t`.
std::vector<std::unique_ptr<transport::RemoteRegion>> ExchangeAndImport(transport::Transport& t,
                                                                        transport::Bootstrap& bootstrap,
                                                                        const transport::MemoryRegion& region,
                                                                        const std::string& name);

}  // namespace stalelearn::backends::ucx::testing
