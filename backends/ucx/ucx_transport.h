// The 'ucx' backend: one-sided RMA over UCX (framework/README.md, transport contract).
// One ucp_context and one UCS_THREAD_MODE_MULTI worker per rank, endpoints to
// every rank (itself included) from worker addresses all-gathered through the
// bootstrap, regions allocated by ucp_mem_map with protection flags from
// Access, keys = packed rkey + base, size and access (region_key.h) so the
// origin checks bounds and rights before UCX does.
//
// Threading: as transport::Transport; every method may be called from any
// thread of the rank. Progress is explicit: a target must call Progress() (or
// wait on something) for tcp and for large puts to complete (deploy/README.md),
// unless the option progress_thread=on runs a ProgressThread for it.
//
// Lifetimes: regions, remote regions and requests must be destroyed before the
// transport; the bootstrap must outlive Create. Destruction is local: it
// completes this rank's operations (peers that must progress for that get a
// few seconds) and closes the endpoints; peers must have stopped using this
// rank's regions by then (e.g. after a barrier that progresses).
#pragma once

#include <memory>
#include <vector>

#include "backends/ucx/handles.h"
#include "backends/ucx/options.h"
#include "backends/ucx/progress_thread.h"
#include "framework/transport/bootstrap.h"
#include "framework/transport/transport.h"

namespace stalelearn::backends::ucx {

class UcxRemoteRegion;

class UcxTransport final : public transport::Transport {
 public:
  // Collective over `bootstrap`: creates the context and worker, exchanges
  // worker addresses and connects to every rank. Blocking.
  static Result<std::unique_ptr<UcxTransport>> Create(transport::Bootstrap& bootstrap, const UcxOptions& options);
  ~UcxTransport() override;
  UcxTransport(const UcxTransport&) = delete;
  UcxTransport& operator=(const UcxTransport&) = delete;

  transport::Rank rank() const override { return rank_; }
  int world_size() const override { return static_cast<int>(endpoints_.size()); }
  transport::Capabilities capabilities() const override;
  const char* name() const override { return "ucx"; }

  Result<std::unique_ptr<transport::MemoryRegion>> Register(std::size_t bytes, transport::Access access) override;
  Result<std::unique_ptr<transport::RemoteRegion>> Import(transport::Rank owner,
                                                          std::span<const std::byte> key) override;

  Result<transport::RequestPtr> Put(const void* src, std::size_t bytes, const transport::RemoteRegion& dst,
                                    std::uint64_t offset) override;
  Result<transport::RequestPtr> Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                    std::uint64_t offset) override;
  Result<transport::RequestPtr> AtomicAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                          std::uint64_t value) override;
  Result<transport::RequestPtr> FetchAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                         std::uint64_t value, std::uint64_t* old) override;
  Result<transport::RequestPtr> CompareSwap(const transport::RemoteRegion& dst, std::uint64_t offset,
                                            std::uint64_t expected, std::uint64_t desired,
                                            std::uint64_t* old) override;

  Status Fence(transport::Rank peer) override;
  Status Flush(transport::Rank peer, transport::Timeout timeout) override;
  Status FlushAll(transport::Timeout timeout) override;
  void Progress() override;
  // From ucp_ep_print_info of each endpoint (endpoint_info.h).
  std::vector<transport::PeerTransports> DescribeEndpoints() const override;

 private:
  UcxTransport(transport::Rank rank, UcpContext context, UcpWorker worker, bool in_process);

  // The remote region behind `region` if it was imported by this transport,
  // `bytes` at `offset` lie inside it and its key grants `needed`.
  Result<const UcxRemoteRegion*> CheckAccess(const transport::RemoteRegion& region, std::uint64_t offset,
                                             std::uint64_t bytes, transport::Access needed,
                                             const char* operation) const;
  Result<transport::RequestPtr> Atomic(const transport::RemoteRegion& dst, std::uint64_t offset,
                                       ucp_atomic_op_t op, const std::uint64_t& operand, std::uint64_t* reply,
                                       const char* what);
  Status CheckPeer(transport::Rank peer, const char* operation) const;
  void Teardown();

  const transport::Rank rank_;
  const bool in_process_;
  // Declared in dependency order: destroyed endpoints, then worker, then context.
  UcpContext context_;
  UcpWorker worker_;
  std::vector<Endpoint> endpoints_;  // by rank; fixed after Create
  std::unique_ptr<ProgressThread> progress_thread_;  // with progress_thread=on; stopped first
};

}  // namespace stalelearn::backends::ucx
