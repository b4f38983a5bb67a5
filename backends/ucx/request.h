// Completion of UCX non-blocking calls (*_nbx). A call returns either NULL
// (done at once), an error pointer, or a request that completes while the
// worker progresses; ucp_request_check_status tells, ucp_request_free
// releases it (then UCX frees it on completion if still in flight).
//
// Threading: UcxRequest has one owner thread (transport::Request). WaitForUcs
// may be called from any thread of a UCS_THREAD_MODE_MULTI worker.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <span>
#include <string_view>

#include "framework/core/status.h"
#include "framework/transport/transport.h"

namespace stalelearn::backends::ucx {

// Progresses `worker` until `request` completes or `timeout` passes
// (kTimeout; the request is then released and left to finish). Blocking.
Status WaitForUcs(ucp_worker_h worker, ucs_status_ptr_t request, transport::Timeout timeout,
                  std::string_view what);

// The same for several requests of one worker with one deadline; returns the
// first error (or kTimeout) after all completed or the deadline passed.
Status WaitForAllUcs(ucp_worker_h worker, std::span<const ucs_status_ptr_t> requests, transport::Timeout timeout,
                     std::string_view what);

// transport::Request over a UCX request. `what` names the operation in
// errors and must be a string literal (it is kept).
class UcxRequest final : public transport::Request {
 public:
  // Takes ownership of `request` (a non-error *_nbx result; NULL = complete).
  UcxRequest(ucp_worker_h worker, ucs_status_ptr_t request, const char* what)
      : worker_(worker), request_(request), what_(what) {}
  ~UcxRequest() override;
  UcxRequest(const UcxRequest&) = delete;
  UcxRequest& operator=(const UcxRequest&) = delete;

  bool Test() override;
  Status Wait(transport::Timeout timeout) override;

  // Every operation makes one UcxRequest: recycle their memory per thread
  // instead of going through malloc each time.
  static void* operator new(std::size_t bytes);
  static void operator delete(void* block, std::size_t bytes) noexcept;

 private:
  // Returns true once complete, without progressing.
  bool Check();

  ucp_worker_h worker_;
  void* request_;  // null once complete
  ucs_status_t status_ = UCS_OK;
  const char* what_;
};

// The RequestPtr for a *_nbx result: an error pointer becomes its Status.
Result<transport::RequestPtr> MakeRequest(ucp_worker_h worker, ucs_status_ptr_t request, const char* what);

}  // namespace stalelearn::backends::ucx
