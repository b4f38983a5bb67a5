// One move-only RAII type per UCX handle (framework/README.md, convention 8): config, context,
// worker, worker address, endpoint, memory mapping, packed rkey buffer,
// unpacked rkey. Each releases its handle in its destructor, which logs a
// failure and never throws. Owners must outlive what they made (a worker its
// endpoints, a context its mappings), so members are declared owner first and
// destroyed in reverse order.
//
// Thread-safety: the wrappers add none. The underlying calls are safe from
// any thread on a UCS_THREAD_MODE_MULTI worker and a context created with
// mt_workers_shared (UcpContext::Create does both).
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "framework/core/status.h"
#include "framework/transport/transport.h"

namespace stalelearn::backends::ucx {

// UCP configuration: UCX_* environment variables overlaid with explicit
// settings (backend options), resolved once before the context is created.
class UcpConfig {
 public:
  static Result<UcpConfig> Read();
  // ucp_config_modify: `name` without the UCX_ prefix, e.g. "TLS".
  Status Set(const std::string& name, const std::string& value);
  ucp_config_t* get() const { return config_.get(); }

 private:
  struct Release {
    void operator()(ucp_config_t* config) const;
  };
  explicit UcpConfig(ucp_config_t* config) : config_(config) {}
  std::unique_ptr<ucp_config_t, Release> config_;
};

// ucp_context with RMA and 64-bit atomics, shareable by threads.
class UcpContext {
 public:
  // `wakeup`: UCP_FEATURE_WAKEUP, for a worker event fd (ProgressThread).
  static Result<UcpContext> Create(const UcpConfig& config, std::size_t estimated_endpoints, bool wakeup);
  ucp_context_h get() const { return context_.get(); }

 private:
  struct Release {
    void operator()(ucp_context_h context) const;
  };
  explicit UcpContext(ucp_context_h context) : context_(context) {}
  std::unique_ptr<ucp_context, Release> context_;
};

// ucp_worker in UCS_THREAD_MODE_MULTI (checked: kUnimplemented otherwise).
class UcpWorker {
 public:
  static Result<UcpWorker> Create(ucp_context_h context);
  ucp_worker_h get() const { return worker_.get(); }

 private:
  struct Release {
    void operator()(ucp_worker_h worker) const;
  };
  explicit UcpWorker(ucp_worker_h worker) : worker_(worker) {}
  std::unique_ptr<ucp_worker, Release> worker_;
};

// This worker's address, the bytes peers need to connect to it.
class WorkerAddress {
 public:
  static Result<WorkerAddress> Of(ucp_worker_h worker);
  std::span<const std::byte> bytes() const;

 private:
  struct Release {
    ucp_worker_h worker = nullptr;
    void operator()(ucp_address_t* address) const;
  };
  WorkerAddress(ucp_worker_h worker, ucp_address_t* address, std::size_t length)
      : address_(address, Release{worker}), length_(length) {}
  std::unique_ptr<ucp_address_t, Release> address_;
  std::size_t length_;
};

// Endpoint to a peer's worker. Closing flushes first (ucp_ep_close_nbx without
// FORCE), which needs the peer to progress; the destructor closes with a short
// deadline if Close() was not called.
class Endpoint {
 public:
  static Result<Endpoint> Connect(ucp_worker_h worker, std::span<const std::byte> peer_address);
  ucp_ep_h get() const { return endpoint_.get(); }
  // Flushes and closes every endpoint of `endpoints` (all of one worker) at
  // once, progressing the worker until all are closed or `timeout`.
  // Blocking; the endpoints are released either way (the worker's destruction
  // reclaims any still closing).
  static Status CloseAll(std::span<Endpoint> endpoints, transport::Timeout timeout);

 private:
  struct Release {
    ucp_worker_h worker = nullptr;
    void operator()(ucp_ep_h endpoint) const;
  };
  Endpoint(ucp_worker_h worker, ucp_ep_h endpoint) : endpoint_(endpoint, Release{worker}) {}
  std::unique_ptr<ucp_ep, Release> endpoint_;
};

// Memory allocated and registered by UCX (UCP_MEM_MAP_ALLOCATE), zeroed.
class MemoryMapping {
 public:
  // `prot`: UCP_MEM_MAP_PROT_* bits.
  static Result<MemoryMapping> Allocate(ucp_context_h context, std::size_t bytes, unsigned prot);
  ucp_mem_h get() const { return memory_.get(); }
  std::byte* address() const { return address_; }

 private:
  struct Release {
    ucp_context_h context = nullptr;
    void operator()(ucp_mem_h memory) const;
  };
  MemoryMapping(ucp_context_h context, ucp_mem_h memory, std::byte* address)
      : memory_(memory, Release{context}), address_(address) {}
  std::unique_ptr<ucp_mem, Release> memory_;
  std::byte* address_;
};

// A packed remote key (ucp_rkey_pack): opaque bytes for peers.
class PackedRkey {
 public:
  static Result<PackedRkey> Pack(ucp_context_h context, ucp_mem_h memory);
  std::span<const std::byte> bytes() const;

 private:
  struct Release {
    void operator()(void* buffer) const;
  };
  PackedRkey(void* buffer, std::size_t length) : buffer_(buffer), length_(length) {}
  std::unique_ptr<void, Release> buffer_;
  std::size_t length_;
};

// A peer's remote key unpacked for one endpoint (ucp_ep_rkey_unpack).
class Rkey {
 public:
  static Result<Rkey> Unpack(ucp_ep_h endpoint, std::span<const std::byte> packed);
  ucp_rkey_h get() const { return rkey_.get(); }

 private:
  struct Release {
    void operator()(ucp_rkey_h rkey) const;
  };
  explicit Rkey(ucp_rkey_h rkey) : rkey_(rkey) {}
  std::unique_ptr<ucp_rkey, Release> rkey_;
};

}  // namespace stalelearn::backends::ucx
