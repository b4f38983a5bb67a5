#include "backends/ucx/handles.h"

#include <chrono>
#include <cstring>
#include <vector>

#include "backends/ucx/request.h"
#include "backends/ucx/ucx_status.h"
#include "framework/core/log.h"

namespace stalelearn::backends::ucx {
namespace {

// How long a destructor waits for a flushing endpoint close before giving up
// (the worker's destruction then reclaims the endpoint).
constexpr std::chrono::seconds kCloseInDestructorTimeout{2};

void LogIfFailed(ucs_status_t status, std::string_view what) {
  if (status != UCS_OK) log::Warning("{}: {}", what, ucs_status_string(status));
}

}  // namespace

// ---- UcpConfig ----

void UcpConfig::Release::operator()(ucp_config_t* config) const { ucp_config_release(config); }

Result<UcpConfig> UcpConfig::Read() {
  ucp_config_t* config = nullptr;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read"));
  return UcpConfig(config);
}

Status UcpConfig::Set(const std::string& name, const std::string& value) {
  return FromUcs(ucp_config_modify(config_.get(), name.c_str(), value.c_str()),
                 "ucp_config_modify " + name + "=" + value);
}

// ---- UcpContext ----

void UcpContext::Release::operator()(ucp_context_h context) const { ucp_cleanup(context); }

Result<UcpContext> UcpContext::Create(const UcpConfig& config, std::size_t estimated_endpoints, bool wakeup) {
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                      UCP_PARAM_FIELD_ESTIMATED_NUM_EPS | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | (wakeup ? UCP_FEATURE_WAKEUP : 0);
  params.mt_workers_shared = 1;  // Register/Import may run on any thread
  params.estimated_num_eps = estimated_endpoints;
  params.name = "stalelearn";
  ucp_context_h context = nullptr;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_init(&params, config.get(), &context), "ucp_init"));
  return UcpContext(context);
}

// ---- UcpWorker ----

void UcpWorker::Release::operator()(ucp_worker_h worker) const { ucp_worker_destroy(worker); }

Result<UcpWorker> UcpWorker::Create(ucp_context_h context) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_MULTI;
  ucp_worker_h handle = nullptr;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_worker_create(context, &params, &handle), "ucp_worker_create"));
  UcpWorker worker(handle);
  // UCX built without --enable-mt silently downgrades the mode.
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_worker_query(handle, &attr), "ucp_worker_query"));
  if (attr.thread_mode != UCS_THREAD_MODE_MULTI) {
    return Unimplemented("ucp_worker_create: this UCX has no UCS_THREAD_MODE_MULTI (built without --enable-mt)");
  }
  return worker;
}

// ---- WorkerAddress ----

void WorkerAddress::Release::operator()(ucp_address_t* address) const {
  ucp_worker_release_address(worker, address);
}

Result<WorkerAddress> WorkerAddress::Of(ucp_worker_h worker) {
  ucp_address_t* address = nullptr;
  std::size_t length = 0;
  STALELEARN_RETURN_IF_ERROR(
      FromUcs(ucp_worker_get_address(worker, &address, &length), "ucp_worker_get_address"));
  return WorkerAddress(worker, address, length);
}

std::span<const std::byte> WorkerAddress::bytes() const {
  return {reinterpret_cast<const std::byte*>(address_.get()), length_};
}

// ---- Endpoint ----

void Endpoint::Release::operator()(ucp_ep_h endpoint) const {
  ucp_request_param_t params{};  // no FORCE flag: flush, then close
  Status closed = WaitForUcs(worker, ucp_ep_close_nbx(endpoint, &params), kCloseInDestructorTimeout,
                             "ucp_ep_close_nbx");
  if (!closed.ok()) log::Warning("closing a UCX endpoint: {}", closed.message());
}

Result<Endpoint> Endpoint::Connect(ucp_worker_h worker, std::span<const std::byte> peer_address) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(peer_address.data());
  ucp_ep_h endpoint = nullptr;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_ep_create(worker, &params, &endpoint), "ucp_ep_create"));
  return Endpoint(worker, endpoint);
}

Status Endpoint::CloseAll(std::span<Endpoint> endpoints, transport::Timeout timeout) {
  if (endpoints.empty()) return Status::Ok();
  const ucp_worker_h worker = endpoints.front().endpoint_.get_deleter().worker;
  std::vector<ucs_status_ptr_t> closing;
  for (Endpoint& endpoint : endpoints) {
    if (!endpoint.endpoint_) continue;
    ucp_request_param_t params{};  // no FORCE flag: flush, then close
    closing.push_back(ucp_ep_close_nbx(endpoint.endpoint_.release(), &params));
  }
  return WaitForAllUcs(worker, closing, timeout, "ucp_ep_close_nbx");
}

// ---- MemoryMapping ----

void MemoryMapping::Release::operator()(ucp_mem_h memory) const {
  LogIfFailed(ucp_mem_unmap(context, memory), "ucp_mem_unmap");
}

Result<MemoryMapping> MemoryMapping::Allocate(ucp_context_h context, std::size_t bytes, unsigned prot) {
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_FLAGS | UCP_MEM_MAP_PARAM_FIELD_PROT;
  params.address = nullptr;
  params.length = bytes;
  params.flags = UCP_MEM_MAP_ALLOCATE;
  params.prot = prot;
  ucp_mem_h memory = nullptr;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_mem_map(context, &params, &memory), "ucp_mem_map"));
  MemoryMapping mapping(context, memory, nullptr);
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_mem_query(memory, &attr), "ucp_mem_query"));
  mapping.address_ = static_cast<std::byte*>(attr.address);
  std::memset(mapping.address_, 0, bytes);  // the contract promises zeroed memory
  return mapping;
}

// ---- PackedRkey ----

void PackedRkey::Release::operator()(void* buffer) const { ucp_rkey_buffer_release(buffer); }

Result<PackedRkey> PackedRkey::Pack(ucp_context_h context, ucp_mem_h memory) {
  void* buffer = nullptr;
  std::size_t length = 0;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_rkey_pack(context, memory, &buffer, &length), "ucp_rkey_pack"));
  return PackedRkey(buffer, length);
}

std::span<const std::byte> PackedRkey::bytes() const {
  return {static_cast<const std::byte*>(buffer_.get()), length_};
}

// ---- Rkey ----

void Rkey::Release::operator()(ucp_rkey_h rkey) const { ucp_rkey_destroy(rkey); }

Result<Rkey> Rkey::Unpack(ucp_ep_h endpoint, std::span<const std::byte> packed) {
  ucp_rkey_h rkey = nullptr;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_ep_rkey_unpack(endpoint, packed.data(), &rkey), "ucp_ep_rkey_unpack"));
  return Rkey(rkey);
}

}  // namespace stalelearn::backends::ucx
