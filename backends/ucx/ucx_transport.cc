#include "backends/ucx/ucx_transport.h"

#include <chrono>
#include <typeinfo>

#include <fmt/format.h>

#include "backends/ucx/endpoint_info.h"
#include "backends/ucx/region_key.h"
#include "backends/ucx/request.h"
#include "backends/ucx/ucx_regions.h"
#include "backends/ucx/ucx_status.h"
#include "framework/core/log.h"
#include "framework/transport/inprocess_bootstrap.h"

namespace stalelearn::backends::ucx {
namespace {

using transport::Access;
using transport::HasAccess;
using transport::Rank;

constexpr std::chrono::seconds kTeardownTimeout{2};
constexpr std::size_t kAtomicBytes = sizeof(std::uint64_t);

unsigned ProtectionFor(Access access) {
  // Local access is always granted: the region is zeroed here and data() is
  // the owner's to read and write.
  unsigned prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE;
  if (HasAccess(access, Access::kRemoteRead)) prot |= UCP_MEM_MAP_PROT_REMOTE_READ;
  if (HasAccess(access, Access::kRemoteWrite)) prot |= UCP_MEM_MAP_PROT_REMOTE_WRITE;
  return prot;
}

}  // namespace

Result<std::unique_ptr<UcxTransport>> UcxTransport::Create(transport::Bootstrap& bootstrap,
                                                           const UcxOptions& options) {
  STALELEARN_ASSIGN_OR_RETURN(UcpConfig config, UcpConfig::Read());
  for (const auto& [name, value] : options.ucx_settings) STALELEARN_RETURN_IF_ERROR(config.Set(name, value));
  const auto world_size = static_cast<std::size_t>(bootstrap.world_size());
  STALELEARN_ASSIGN_OR_RETURN(UcpContext context, UcpContext::Create(config, world_size, options.progress_thread));
  STALELEARN_ASSIGN_OR_RETURN(UcpWorker worker, UcpWorker::Create(context.get()));
  const bool in_process = dynamic_cast<transport::InProcessBootstrap*>(&bootstrap) != nullptr;
  std::unique_ptr<UcxTransport> transport(
      new UcxTransport(bootstrap.rank(), std::move(context), std::move(worker), in_process));

  STALELEARN_ASSIGN_OR_RETURN(WorkerAddress address, WorkerAddress::Of(transport->worker_.get()));
  STALELEARN_ASSIGN_OR_RETURN(std::vector<transport::Bytes> addresses,
                              bootstrap.AllGather("ucx.worker_address", address.bytes()));
  for (std::size_t peer = 0; peer < addresses.size(); ++peer) {
    auto endpoint = Endpoint::Connect(transport->worker_.get(), addresses[peer]);
    if (!endpoint.ok()) return endpoint.status().WithContext(fmt::format("connecting to rank {}", peer));
    transport->endpoints_.push_back(std::move(endpoint).value());
  }
  if (options.progress_thread) {
    STALELEARN_ASSIGN_OR_RETURN(transport->progress_thread_, ProgressThread::Start(transport->worker_.get()));
  }
  return transport;
}

UcxTransport::UcxTransport(transport::Rank rank, UcpContext context, UcpWorker worker, bool in_process)
    : rank_(rank),
      in_process_(in_process),
      context_(std::move(context)),
      worker_(std::move(worker)) {}

UcxTransport::~UcxTransport() { Teardown(); }

void UcxTransport::Teardown() {
  // Local, never collective: complete what this rank issued (peers that must
  // progress for it get kTeardownTimeout), then close the endpoints. A peer
  // still holding a key of ours gets errors, not our memory, once we are gone.
  progress_thread_.reset();  // from here on this thread progresses
  if (Status s = FlushAll(kTeardownTimeout); !s.ok()) log::Warning("ucx teardown: {}", s.message());
  if (Status s = Endpoint::CloseAll(endpoints_, kTeardownTimeout); !s.ok()) {
    // A peer that tore down first makes the flushing close fail: expected.
    if (s.code() == StatusCode::kUnavailable) {
      log::Debug("ucx teardown: {}", s.message());
    } else {
      log::Warning("ucx teardown: {}", s.message());
    }
  }
}

transport::Capabilities UcxTransport::capabilities() const {
  return transport::Capabilities{.enforces_remote_access = true,
                                 .checks_remote_bounds = true,
                                 .target_must_progress = progress_thread_ == nullptr,
                                 .in_process = in_process_,
                                 // ~0.3 us to post and complete an RMA
                                 // operation against ~12.5 GB/s (100 Gb/s).
                                 .operation_cost_bytes = 4096};
}

Result<std::unique_ptr<transport::MemoryRegion>> UcxTransport::Register(std::size_t bytes, Access access) {
  if (bytes == 0) return InvalidArgument("ucx Register: a region needs at least one byte");
  STALELEARN_ASSIGN_OR_RETURN(MemoryMapping mapping,
                              MemoryMapping::Allocate(context_.get(), bytes, ProtectionFor(access)));
  STALELEARN_ASSIGN_OR_RETURN(PackedRkey packed, PackedRkey::Pack(context_.get(), mapping.get()));
  transport::PackedKey key = EncodeRegionKey(RegionKey{.owner = rank_,
                                                       .base_address = reinterpret_cast<std::uint64_t>(mapping.address()),
                                                       .size = bytes,
                                                       .access = access,
                                                       .packed_rkey = packed.bytes()});
  return std::unique_ptr<transport::MemoryRegion>(
      std::make_unique<UcxMemoryRegion>(std::move(mapping), bytes, access, std::move(key)));
}

Result<std::unique_ptr<transport::RemoteRegion>> UcxTransport::Import(Rank owner, std::span<const std::byte> key) {
  STALELEARN_RETURN_IF_ERROR(CheckPeer(owner, "Import"));
  STALELEARN_ASSIGN_OR_RETURN(RegionKey decoded, DecodeRegionKey(key));
  if (decoded.owner != owner) {
    return InvalidArgument(
        fmt::format("ucx Import: key belongs to rank {}, not to rank {}", decoded.owner.value, owner.value));
  }
  const ucp_ep_h endpoint = endpoints_[owner.value].get();
  STALELEARN_ASSIGN_OR_RETURN(Rkey rkey, Rkey::Unpack(endpoint, decoded.packed_rkey));
  return std::unique_ptr<transport::RemoteRegion>(
      std::make_unique<UcxRemoteRegion>(this, endpoint, decoded, std::move(rkey)));
}

Status UcxTransport::CheckPeer(Rank peer, const char* operation) const {
  if (peer.value < 0 || peer.value >= world_size()) {
    return InvalidArgument(fmt::format("ucx {}: rank {} outside 0..{}", operation, peer.value, world_size() - 1));
  }
  return Status::Ok();
}

Result<const UcxRemoteRegion*> UcxTransport::CheckAccess(const transport::RemoteRegion& region,
                                                         std::uint64_t offset, std::uint64_t bytes,
                                                         Access needed, const char* operation) const {
  // typeid of a final class is an exact and cheap test (dynamic_cast costs
  // as much as a small put here).
  if (typeid(region) != typeid(UcxRemoteRegion)) {
    return InvalidArgument(fmt::format("ucx {}: remote region is not from the ucx backend", operation));
  }
  const auto* remote = static_cast<const UcxRemoteRegion*>(&region);
  if (remote->importer() != this) {
    return InvalidArgument(fmt::format("ucx {}: remote region was not imported by this transport", operation));
  }
  if (offset > remote->size() || bytes > remote->size() - offset) {
    return OutOfRange(fmt::format("ucx {}: {} bytes at offset {} outside rank {}'s region of {} bytes", operation,
                                  bytes, offset, remote->owner().value, remote->size()));
  }
  if (!HasAccess(remote->access(), needed)) {
    return PermissionDenied(fmt::format("ucx {}: rank {}'s region does not grant remote {}", operation,
                                        remote->owner().value,
                                        needed == Access::kRemoteRead ? "read" : "write"));
  }
  return remote;
}

Result<transport::RequestPtr> UcxTransport::Put(const void* src, std::size_t bytes,
                                                const transport::RemoteRegion& dst, std::uint64_t offset) {
  STALELEARN_ASSIGN_OR_RETURN(const UcxRemoteRegion* remote, CheckAccess(dst, offset, bytes, Access::kRemoteWrite, "Put"));
  if (bytes == 0) return MakeRequest(worker_.get(), nullptr, "ucp_put_nbx");
  ucp_request_param_t params{};
  return MakeRequest(worker_.get(),
                     ucp_put_nbx(remote->endpoint(), src, bytes, remote->address_at(offset), remote->rkey(), &params),
                     "ucp_put_nbx");
}

Result<transport::RequestPtr> UcxTransport::Get(void* dst, std::size_t bytes, const transport::RemoteRegion& src,
                                                std::uint64_t offset) {
  STALELEARN_ASSIGN_OR_RETURN(const UcxRemoteRegion* remote, CheckAccess(src, offset, bytes, Access::kRemoteRead, "Get"));
  if (bytes == 0) return MakeRequest(worker_.get(), nullptr, "ucp_get_nbx");
  ucp_request_param_t params{};
  return MakeRequest(worker_.get(),
                     ucp_get_nbx(remote->endpoint(), dst, bytes, remote->address_at(offset), remote->rkey(), &params),
                     "ucp_get_nbx");
}

Result<transport::RequestPtr> UcxTransport::Atomic(const transport::RemoteRegion& dst, std::uint64_t offset,
                                                   ucp_atomic_op_t op, const std::uint64_t& operand,
                                                   std::uint64_t* reply, const char* what) {
  if (offset % kAtomicBytes != 0) {
    return InvalidArgument(fmt::format("ucx {}: offset {} is not 8-byte aligned", what, offset));
  }
  STALELEARN_ASSIGN_OR_RETURN(const UcxRemoteRegion* remote,
                              CheckAccess(dst, offset, kAtomicBytes, Access::kRemoteWrite, what));
  ucp_request_param_t params{};
  params.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
  params.datatype = ucp_dt_make_contig(kAtomicBytes);
  if (reply != nullptr) {
    params.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    params.reply_buffer = reply;
  }
  // UCX copies the operand when the call is made; `reply` must live on.
  return MakeRequest(worker_.get(),
                     ucp_atomic_op_nbx(remote->endpoint(), op, &operand, 1, remote->address_at(offset),
                                       remote->rkey(), &params),
                     what);
}

Result<transport::RequestPtr> UcxTransport::AtomicAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                                      std::uint64_t value) {
  return Atomic(dst, offset, UCP_ATOMIC_OP_ADD, value, nullptr, "AtomicAdd");
}

Result<transport::RequestPtr> UcxTransport::FetchAdd(const transport::RemoteRegion& dst, std::uint64_t offset,
                                                     std::uint64_t value, std::uint64_t* old) {
  if (old == nullptr) return InvalidArgument("ucx FetchAdd: `old` is null");
  return Atomic(dst, offset, UCP_ATOMIC_OP_ADD, value, old, "FetchAdd");
}

Result<transport::RequestPtr> UcxTransport::CompareSwap(const transport::RemoteRegion& dst, std::uint64_t offset,
                                                        std::uint64_t expected, std::uint64_t desired,
                                                        std::uint64_t* old) {
  // A CSWAP without a reply buffer aborts inside UCX (deploy/README.md): never issue one.
  if (old == nullptr) return InvalidArgument("ucx CompareSwap: `old` is null");
  // UCX takes the value to store in the reply buffer and returns the old one there.
  *old = desired;
  return Atomic(dst, offset, UCP_ATOMIC_OP_CSWAP, expected, old, "CompareSwap");
}

Status UcxTransport::Fence(Rank peer) {
  STALELEARN_RETURN_IF_ERROR(CheckPeer(peer, "Fence"));
  // UCX fences the whole worker: stronger than per-peer, which the contract allows.
  return FromUcs(ucp_worker_fence(worker_.get()), "ucp_worker_fence");
}

Status UcxTransport::Flush(Rank peer, transport::Timeout timeout) {
  STALELEARN_RETURN_IF_ERROR(CheckPeer(peer, "Flush"));
  ucp_request_param_t params{};
  Status flushed =
      WaitForUcs(worker_.get(), ucp_ep_flush_nbx(endpoints_[peer.value].get(), &params), timeout, "ucp_ep_flush_nbx");
  if (!flushed.ok()) return flushed.WithContext(fmt::format("flush to rank {}", peer.value));
  return flushed;
}

Status UcxTransport::FlushAll(transport::Timeout timeout) {
  ucp_request_param_t params{};
  return WaitForUcs(worker_.get(), ucp_worker_flush_nbx(worker_.get(), &params), timeout, "ucp_worker_flush_nbx");
}

void UcxTransport::Progress() { ucp_worker_progress(worker_.get()); }

std::vector<transport::PeerTransports> UcxTransport::DescribeEndpoints() const {
  std::vector<transport::PeerTransports> described;
  for (std::size_t peer = 0; peer < endpoints_.size(); ++peer) {
    if (endpoints_[peer].get() == nullptr) continue;  // closed by teardown
    described.push_back({transport::Rank{static_cast<int>(peer)}, EndpointTransports(endpoints_[peer].get())});
  }
  return described;
}

}  // namespace stalelearn::backends::ucx
