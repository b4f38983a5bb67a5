#include "backends/ucx/request.h"

#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backends/ucx/ucx_status.h"
#include "framework/core/wait.h"

namespace stalelearn::backends::ucx {
namespace {

// How request waits poll (WaitFor, framework/core/wait.h): spin first, for
// the latency of short waits (a put+flush on shared memory takes ~0.05 us);
// then yield, so that ranks oversubscribing the cores do not starve each other
// (deploy/README.md); and sleep only after a long idle (65536 yields, tens of
// ms), when a few more microseconds no longer matter. An idle poll is one in
// which ucp_worker_progress did nothing.
const Backoff::Policy kRequestBackoff{.spins = 2048,
                                      .yields = 65536,
                                      .first_sleep = std::chrono::microseconds(5),
                                      .max_sleep = std::chrono::microseconds(100)};

// Polls `done` while progressing `worker`, until true or `timeout`.
template <class Done>
bool ProgressUntil(ucp_worker_h worker, transport::Timeout timeout, Done done) {
  // Reading the clock costs more than a poll: the deadline is checked every
  // 16 polls, and the time waited is not measured.
  const WaitSpec spec{.timeout = timeout, .backoff = kRequestBackoff, .polls_per_clock_read = 16, .measure = false};
  // kTimeout is the only error possible; the callers word their own.
  return WaitFor(spec, done, [worker] { return ucp_worker_progress(worker) != 0; }).ok();
}

std::string TimeoutMessage(std::string_view what, transport::Timeout timeout, std::size_t incomplete) {
  return fmt::format("{}: {} request(s) not complete after {} ms", what, incomplete,
                     std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count());
}

// Per-thread cache of UcxRequest-sized blocks. A block freed on another
// thread than the one that allocated it simply joins that thread's cache.
class RequestBlockCache {
 public:
  ~RequestBlockCache() {
    for (void* block : blocks_) ::operator delete(block);
  }
  void* Take(std::size_t bytes) {
    if (bytes != sizeof(UcxRequest) || blocks_.empty()) return ::operator new(bytes);
    void* block = blocks_.back();
    blocks_.pop_back();
    return block;
  }
  void Give(void* block, std::size_t bytes) {
    constexpr std::size_t kMaxCached = 1024;
    if (bytes != sizeof(UcxRequest) || blocks_.size() >= kMaxCached) {
      ::operator delete(block);
      return;
    }
    blocks_.push_back(block);
  }

 private:
  std::vector<void*> blocks_;
};

RequestBlockCache& ThisThreadsBlocks() {
  thread_local RequestBlockCache cache;
  return cache;
}

}  // namespace

void* UcxRequest::operator new(std::size_t bytes) { return ThisThreadsBlocks().Take(bytes); }

void UcxRequest::operator delete(void* block, std::size_t bytes) noexcept { ThisThreadsBlocks().Give(block, bytes); }

Status WaitForUcs(ucp_worker_h worker, ucs_status_ptr_t request, transport::Timeout timeout,
                  std::string_view what) {
  return WaitForAllUcs(worker, std::span(&request, 1), timeout, what);
}

Status WaitForAllUcs(ucp_worker_h worker, std::span<const ucs_status_ptr_t> requests, transport::Timeout timeout,
                     std::string_view what) {
  Status first_error;
  std::vector<void*> pending;
  for (ucs_status_ptr_t request : requests) {
    if (UCS_PTR_IS_ERR(request)) {
      if (first_error.ok()) first_error = FromUcs(UCS_PTR_STATUS(request), what);
    } else if (request != nullptr) {
      pending.push_back(request);
    }
  }
  // Completed requests are freed as they finish; the rest on timeout.
  ProgressUntil(worker, timeout, [&] {
    std::erase_if(pending, [&](void* request) {
      const ucs_status_t status = ucp_request_check_status(request);
      if (status == UCS_INPROGRESS) return false;
      if (first_error.ok() && status != UCS_OK) first_error = FromUcs(status, what);
      ucp_request_free(request);
      return true;
    });
    return pending.empty();
  });
  if (!pending.empty()) {
    for (void* request : pending) ucp_request_free(request);  // UCX finishes and frees them
    if (first_error.ok()) first_error = TimeoutError(TimeoutMessage(what, timeout, pending.size()));
  }
  return first_error;
}

UcxRequest::~UcxRequest() {
  // Dropping an incomplete request is allowed: UCX completes and frees it.
  if (request_ != nullptr) ucp_request_free(request_);
}

bool UcxRequest::Check() {
  if (request_ == nullptr) return true;
  const ucs_status_t status = ucp_request_check_status(request_);
  if (status == UCS_INPROGRESS) return false;
  status_ = status;
  ucp_request_free(request_);
  request_ = nullptr;
  return true;
}

bool UcxRequest::Test() {
  if (request_ == nullptr) return true;
  ucp_worker_progress(worker_);
  return Check();
}

Status UcxRequest::Wait(transport::Timeout timeout) {
  if (request_ != nullptr && !ProgressUntil(worker_, timeout, [this] { return Check(); })) {
    return TimeoutError(TimeoutMessage(what_, timeout, 1));
  }
  return FromUcs(status_, what_);
}

Result<transport::RequestPtr> MakeRequest(ucp_worker_h worker, ucs_status_ptr_t request, const char* what) {
  if (UCS_PTR_IS_ERR(request)) return FromUcs(UCS_PTR_STATUS(request), what);
  return transport::RequestPtr(std::make_unique<UcxRequest>(worker, request, what));
}

}  // namespace stalelearn::backends::ucx
