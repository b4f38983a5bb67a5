#include "framework/runtime/stop_request.h"

#include <atomic>
#include <csignal>
#include <cstdio>

namespace stalelearn::runtime {
namespace {

// Lock-free, so the handler may write it (async-signal-safe).
std::atomic<int> requested_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGUSR1};

extern "C" void OnStopSignal(int signal) {
  // SA_RESETHAND already restored the default action: the next one ends the process.
  int expected = 0;
  requested_signal.compare_exchange_strong(expected, signal);
}

}  // namespace

void InstallStopSignalHandlers() {
  ClearStopRequest();
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  action.sa_flags = SA_RESETHAND | SA_RESTART;  // once; slow system calls resume
  sigemptyset(&action.sa_mask);
  for (int signal : kStopSignals) sigaction(signal, &action, nullptr);
}

int StopSignal() { return requested_signal.load(std::memory_order_relaxed); }

void RequestStop(int signal) {
  int expected = 0;
  requested_signal.compare_exchange_strong(expected, signal);
}

void ClearStopRequest() { requested_signal.store(0); }

const char* StopSignalName(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGUSR1:
      return "SIGUSR1";
    case kEarlyStopRequest:
      return "early_stopping";
    default:
      return "a signal";
  }
}

}  // namespace stalelearn::runtime
