// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID): what it ran on a
// core, without the time it waited or was preempted. On cores shared by
// more ranks than there are cores, wall time counts both; the cost of a
// phase of work (a refresh, a merge and its publish) is its CPU time.
//
// A system call (about a microsecond in a VM): time phases of work, never
// rows or idle polls. Thread-safe (each thread reads its own clock).
#pragma once

#include <time.h>

#include <chrono>

namespace stalelearn {

inline std::chrono::nanoseconds ThreadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace stalelearn
