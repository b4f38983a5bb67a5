#include "backends/ucx/progress_thread.h"

#include <poll.h>

#include "backends/ucx/ucx_status.h"
#include "framework/core/log.h"

namespace stalelearn::backends::ucx {
namespace {

constexpr int kPollTimeoutMs = 1;

}  // namespace

Result<std::unique_ptr<ProgressThread>> ProgressThread::Start(ucp_worker_h worker) {
  int event_fd = -1;
  STALELEARN_RETURN_IF_ERROR(FromUcs(ucp_worker_get_efd(worker, &event_fd), "ucp_worker_get_efd"));
  return std::unique_ptr<ProgressThread>(new ProgressThread(worker, event_fd));
}

ProgressThread::ProgressThread(ucp_worker_h worker, int event_fd)
    : worker_(worker), event_fd_(event_fd), thread_([this](std::stop_token stop) { Run(stop); }) {}

ProgressThread::~ProgressThread() {
  thread_.request_stop();
  // Wakes a poll() in progress; the thread then sees the stop request.
  if (ucs_status_t status = ucp_worker_signal(worker_); status != UCS_OK) {
    log::Warning("ucp_worker_signal: {}", ucs_status_string(status));
  }
  thread_.join();
}

void ProgressThread::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    if (ucp_worker_progress(worker_) != 0) continue;
    const ucs_status_t armed = ucp_worker_arm(worker_);
    if (armed == UCS_ERR_BUSY) continue;  // events arrived meanwhile: progress again
    if (armed != UCS_OK) {
      log::Warning("ucx progress thread stops: {}", ucs_status_string(armed));
      return;
    }
    pollfd descriptor{event_fd_, POLLIN, 0};
    ::poll(&descriptor, 1, kPollTimeoutMs);
  }
}

}  // namespace stalelearn::backends::ucx
