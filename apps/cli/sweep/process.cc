#include "apps/cli/sweep/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>

#include "framework/core/wait.h"

extern char** environ;

namespace stalelearn::cli::sweep {

namespace {

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int error = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) return NotFound(fmt::format("cannot start {}: {}", argv[0], std::strerror(error)));
  return pid;
}

// Waits for `pid` until `deadline` (none: forever, blocked in waitpid).
// Returns the exit status, or nullopt when the deadline passed first.
Result<std::optional<int>> WaitUntil(pid_t pid, const std::string& program,
                                     std::optional<std::chrono::steady_clock::time_point> deadline) {
  int status = 0;
  if (!deadline) {
    while (waitpid(pid, &status, 0) != pid) {
      if (errno != EINTR) return Internal(fmt::format("waiting for {}: {}", program, std::strerror(errno)));
    }
    return std::optional<int>(status);
  }
  // A child runs for seconds to hours: poll every 20 ms, never spin.
  constexpr std::chrono::milliseconds kPollPeriod{20};
  const WaitSpec spec{.timeout = std::max(std::chrono::nanoseconds(0), *deadline - std::chrono::steady_clock::now()),
                      .backoff = {.spins = 0, .yields = 0, .first_sleep = kPollPeriod, .max_sleep = kPollPeriod}};
  const auto exited = WaitFor(spec, [&]() -> Result<bool> {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return true;
    if (done < 0 && errno != EINTR) return Internal(fmt::format("waiting for {}: {}", program, std::strerror(errno)));
    return false;
  });
  if (exited.ok()) return std::optional<int>(status);
  if (exited.status().code() == StatusCode::kTimeout) return std::optional<int>();
  return exited.status();
}

}  // namespace

Result<int> RunProcess(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  STALELEARN_ASSIGN_OR_RETURN(const ProcessExit exit, RunProcessWithTimeout(argv, log, 0));
  return exit.code;
}

Result<ProcessExit> RunProcessWithTimeout(const std::vector<std::string>& argv, const std::filesystem::path& log,
                                          double timeout_seconds) {
  STALELEARN_ASSIGN_OR_RETURN(const pid_t pid, Spawn(argv, log));
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> deadline;
  if (timeout_seconds > 0) {
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  }
  STALELEARN_ASSIGN_OR_RETURN(std::optional<int> status, WaitUntil(pid, argv[0], deadline));
  if (status) return ProcessExit{ExitCode(*status), false};
  kill(pid, SIGTERM);
  STALELEARN_ASSIGN_OR_RETURN(status, WaitUntil(pid, argv[0], Clock::now() + std::chrono::seconds(10)));
  if (!status) {
    kill(pid, SIGKILL);
    STALELEARN_ASSIGN_OR_RETURN(status, WaitUntil(pid, argv[0], std::nullopt));
  }
  return ProcessExit{ExitCode(*status), true};
}

std::string LastLine(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

std::filesystem::path SelfExecutable() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("stalelearn") : self;
}

}  // namespace stalelearn::cli::sweep
