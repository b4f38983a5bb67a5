// Runs a child program (a sweep's training runs, gnuplot) to completion,
// stdin from /dev/null, stdout and stderr into a log file.
// Thread-safety: stateless; blocks the calling thread until the child exits.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "framework/core/status.h"

namespace stalelearn::cli::sweep {

// `argv[0]` is looked up in PATH unless it contains '/'. Returns the exit
// code (128 + signal if killed); kNotFound when the program cannot be started.
Result<int> RunProcess(const std::vector<std::string>& argv, const std::filesystem::path& log);

struct ProcessExit {
  int code = 0;            // as RunProcess; meaningless when timed_out
  bool timed_out = false;  // killed after timeout_seconds
};

// RunProcess under a deadline: with timeout_seconds > 0, a child still
// running after that long gets SIGTERM (mpirun then stops its ranks), and
// SIGKILL if it has not exited 10 seconds later. The child stays in the
// caller's process group, so a Ctrl-C of the caller reaches it too.
Result<ProcessExit> RunProcessWithTimeout(const std::vector<std::string>& argv, const std::filesystem::path& log,
                                          double timeout_seconds);

// The last non-empty line of a text file ("" if none): for one-line errors.
std::string LastLine(const std::filesystem::path& path);

// This program's own executable (/proc/self/exe), to start its `train`.
std::filesystem::path SelfExecutable();

}  // namespace stalelearn::cli::sweep
