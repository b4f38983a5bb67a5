// A thread that progresses a UCX worker so that this rank serves peers' RMA
// (tcp, large puts) while its own threads are busy or blocked, e.g. in an MPI
// collective (option progress_thread=on). It sleeps in poll() on the worker's
// event fd (UCP_FEATURE_WAKEUP) when there is nothing to do, so an idle rank
// costs no CPU; a short poll timeout bounds the delay of an event that another
// thread's progress consumed between arm and poll.
//
// Threading: needs a UCS_THREAD_MODE_MULTI worker (other threads keep calling
// UCX). Lifetime: must be destroyed before the worker; the destructor wakes
// the thread with ucp_worker_signal and joins it.
#pragma once

#include <ucp/api/ucp.h>

#include <memory>
#include <thread>

#include "framework/core/status.h"

namespace stalelearn::backends::ucx {

class ProgressThread {
 public:
  // kUnavailable if the worker has no event fd (context without WAKEUP).
  static Result<std::unique_ptr<ProgressThread>> Start(ucp_worker_h worker);
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

 private:
  ProgressThread(ucp_worker_h worker, int event_fd);
  void Run(std::stop_token stop);

  ucp_worker_h worker_;
  int event_fd_;          // owned by the worker
  std::jthread thread_;   // last: starts after the fields it reads are set
};

}  // namespace stalelearn::backends::ucx
