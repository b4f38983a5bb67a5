#include "backends/ucx/request.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "backends/ucx/ucx_status.h"
#include "framework/core/log.h"

namespace stalelearn::backends::ucx {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `done` while progressing `worker`, until true or `timeout`.
template <class Done>
bool ProgressUntil(ucp_worker_h worker, transport::Timeout timeout, Done done) {
  const auto deadline = Clock::now() + timeout;
  PollBackoff backoff;
  for (unsigned polls = 0;; ++polls) {
    if (ucp_worker_progress(worker) == 0) backoff.Idle();
    if (done()) return true;
    // Reading the clock costs more than a poll; check it every few polls.
    if (polls % 16 == 0 && Clock::now() >= deadline) return done();
  }
}

}  // namespace

void PollBackoff::Idle() {
  constexpr unsigned kSpinPolls = 2048;
  if (++idle_polls_ > kSpinPolls) std::this_thread::yield();
}

Status WaitForUcs(ucp_worker_h worker, ucs_status_ptr_t request, transport::Timeout timeout,
                  std::string_view what) {
  if (request == nullptr) return Status::Ok();
  if (UCS_PTR_IS_ERR(request)) return FromUcs(UCS_PTR_STATUS(request), what);
  ucs_status_t status = UCS_INPROGRESS;
  const bool done = ProgressUntil(worker, timeout, [&] {
    status = ucp_request_check_status(request);
    return status != UCS_INPROGRESS;
  });
  ucp_request_free(request);
  if (!done) {
    return TimeoutError(fmt::format("{}: not complete after {} ms", what,
                                    std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
  }
  return FromUcs(status, what);
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
    return TimeoutError(fmt::format("{}: not complete after {} ms", what_,
                                    std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()));
  }
  return FromUcs(status_, what_);
}

Result<transport::RequestPtr> MakeRequest(ucp_worker_h worker, ucs_status_ptr_t request, const char* what) {
  if (UCS_PTR_IS_ERR(request)) return FromUcs(UCS_PTR_STATUS(request), what);
  return transport::RequestPtr(std::make_unique<UcxRequest>(worker, request, what));
}

}  // namespace stalelearn::backends::ucx
